// Shared by the example kernels: the generation's matmul tile sizes (NKI's nl.tile_size), the
// tutorials' common set-up (tensors, strip loads, row tiles) and argument checks that name the
// kernel and the argument, so that each kernel file holds only its own algorithm.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "arch/core_spec.h"
#include "kernel/builder.h"
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

// Throws unless m, k and n are positive multiples of step.m, step.k and step.n (a tile or a
// block of tiles), naming the kernel and the argument.
void require_matmul_shape(std::string_view kernel, int64_t m, int64_t k, int64_t n,
                          const MatmulTiles& step);

// The tutorials' problem, result[M, N] = lhsT[K, M].T @ rhs[K, N], all bf16 in HBM.
struct MatmulTensors {
  kernel::Tensor lhsT, rhs, result;
};
// Declares lhsT and rhs (inputs) and result (output), in that order, and sets
// load_bound_policy() on `kb`.
MatmulTensors matmul_tensors(kernel::KernelBuilder& kb, int64_t m, int64_t k, int64_t n);

// Loads a K strip as the tutorials hold it, `strip` being [tile_k, tiles, free]: strip(all, i)
// gets rows (first + i) * tile_k .. + tile_k of `src`, columns `cols`, for every tile i.
void load_k_strip(kernel::KernelBuilder& kb, const kernel::Tile& strip, const kernel::Tensor& src,
                  int64_t tile_k, int64_t first, kernel::Idx cols);

// The row-wise kernels (softmax, layernorm, rmsnorm) take [rows, cols] with rows >= 1 and
// 1 <= cols <= 16384; throws otherwise.
void require_rows(std::string_view kernel, int64_t rows, int64_t cols);

// Calls body(r0, p, buf) for rows r0 .. r0 + p - 1 of `rows`, `parts` at a time (the last tile
// may be short), buf alternating 0, 1: two buffers per tile let the next rows load while the
// current ones are computed.
template <class Body>
void for_each_row_tile(int64_t rows, int64_t parts, Body&& body) {
  for (int64_t r0 = 0, i = 0; r0 < rows; r0 += parts, ++i)
    body(r0, std::min(parts, rows - r0), static_cast<size_t>(i % 2));
}

// Throws InputError("<kernel>", "<arg>", ...) unless value >= 1 and value % of == 0.
void require_multiple(std::string_view kernel, std::string_view arg, int64_t value, int64_t of);
// Throws unless lo <= value <= hi.
void require_range(std::string_view kernel, std::string_view arg, int64_t value, int64_t lo,
                   int64_t hi);

}  // namespace trnsim::examples
