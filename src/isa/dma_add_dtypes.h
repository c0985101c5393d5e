// The dtypes a DMA that adds takes, the same on both sides (HARDWARE.md s4). The DMA computes in
// fp32 (DMA-OV: src -> fp32 -> dst), so an integer sum is exact while it stays below 2^24.
#pragma once

#include "numerics/format.h"

namespace trnsim::isa {

// dma_copy's accumulate into SBUF (the v4 read-add-write; earlier generations in the DMA CC
// engines): bf16 or fp32, as the ISA gives it.
inline bool sbuf_accumulate_dtype(num::Dtype d) {
  return d == num::Dtype::kBf16 || d == num::Dtype::kFp32;
}

// A scatter that adds into HBM (NKI atomic_rmw, the SWDGE's read-modify-write): bf16 and fp32,
// and int32 / uint32 counts through the same fp32 add. The integers are an assumption from the
// public kernels that scatter-add int32 histogram counts; the ISA names no integer restriction.
inline bool scatter_add_dtype(num::Dtype d) {
  return sbuf_accumulate_dtype(d) || d == num::Dtype::kInt32 || d == num::Dtype::kUint32;
}

}  // namespace trnsim::isa
