// Shared by the example kernels: the generation's matmul tile sizes (NKI's nl.tile_size) and
// argument checks that name the kernel and the argument.
#pragma once

#include <cstdint>
#include <string_view>

#include "arch/core_spec.h"
#include "kernel/operands.h"

namespace trnsim::examples {

struct MatmulTiles {
  int64_t k = 128;  // pmax: contraction on the partition dim
  int64_t m = 128;  // gemm_stationary_fmax
  int64_t n = 512;  // gemm_moving_fmax: one PSUM bank of fp32 on every generation
};
MatmulTiles matmul_tiles(const arch::CoreSpec& core);

// DMA policy of the matmul kernels: loads triggered alternately from Sync and Scalar (the two
// hardware-DGE streams, which these kernels leave free of compute; kernel/operands.h).
kernel::DmaPolicy load_bound_policy();

// Throws InputError("<kernel>", "<arg>", ...) unless value >= 1 and value % of == 0.
void require_multiple(std::string_view kernel, std::string_view arg, int64_t value, int64_t of);
// Throws unless lo <= value <= hi.
void require_range(std::string_view kernel, std::string_view arg, int64_t value, int64_t lo,
                   int64_t hi);

}  // namespace trnsim::examples
