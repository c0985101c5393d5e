// The addressing rules of on-chip memory (HARDWARE.md s3) as plain functions, for static
// validation here and for the memory model (src/mem) at run time.
#pragma once

#include <algorithm>
#include <cstdint>

#include "base/int128.h"
#include "isa/access_pattern.h"

namespace trnsim::isa {

// An engine access of `count` contiguous partitions may start only at: 0 when count > 64;
// 0 or 64 when 33..64; 0, 32, 64 or 96 when 1..32 (AG2). Range limits are separate.
constexpr bool start_partition_allowed(int64_t start, int64_t count) {
  if (count > 64) return start == 0;
  if (count > 32) return start == 0 || start == 64;
  return count >= 1 && start >= 0 && start % 32 == 0 && start <= 96;
}

// Hardware free-dim fields: size uint16 (>= 1), stride int16, in elements (AG2).
inline constexpr int64_t kMaxFreeSize = 65535;
// Elements per partition VectorE streams in one instruction, by operand memory (HARDWARE.md
// s2.3): 64K from SBUF, 4K from PSUM.
inline constexpr int64_t kVectorFreeMaxSbuf = 65536;
inline constexpr int64_t kVectorFreeMaxPsum = 4096;
inline constexpr int64_t kMinFreeStride = -32768, kMaxFreeStride = 32767;

// Bytes an access touches, [lo, hi): within a partition for SBUF/PSUM (relative to the start
// of the partition), device addresses for HBM (rows included). Exact in 128 bits for any
// field values; meaningful when every size >= 1 and 0 <= ndim <= 4.
struct ByteExtent {
  int128 lo = 0, hi = 0;
};
inline ByteExtent byte_extent(const AccessPattern& ap) {
  int128 lo = 0, hi = 0;  // in elements, relative to the offset
  auto span = [&](int64_t stride, int64_t size) {
    const int128 reach = int128{stride} * (size - 1);
    (reach < 0 ? lo : hi) += reach;
  };
  for (int i = 0; i < std::clamp(ap.ndim, 0, kMaxFreeDims); ++i)
    span(ap.dims[static_cast<size_t>(i)].stride, ap.dims[static_cast<size_t>(i)].size);
  if (ap.space == Space::kHbm) span(ap.partition_stride, ap.num_partitions);
  const int128 esize = ap.dtype.storage_bytes;
  return {ap.offset + lo * esize, ap.offset + (hi + 1) * esize};
}

}  // namespace trnsim::isa
