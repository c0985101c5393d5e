// Example kernels written with the kernel API (src/kernel/builder.h). Each builds a Program for
// the given shapes on a generation; registry.h names them for the CLI. Tensor names are part of
// each kernel's interface (the host writes inputs and reads outputs by name).
//
// Shapes must tile evenly where a kernel says so; a shape that does not is an InputError
// naming the kernel and the argument.
#pragma once

#include <cstdint>

#include "arch/chip_spec.h"
#include "isa/program.h"

namespace trnsim::examples {

// The NKI matrix-multiplication tutorial (aws-neuron-sdk nki/tutorials/matrix_multiplication,
// kernels in nki/examples/matrix_multiplication/), same tiling:
//   result[M, N] (bf16) = lhsT[K, M].T @ rhs[K, N], bf16 inputs, fp32 PSUM accumulation.
// Tiles are 128 (K) x 128 (M, stationary) x 512 (N, moving): K, M multiples of 128, N of 512.
//  tiled:  loads of both tiles inside the K loop.                      (matmul_tiled.cc)
//  hoisted: a whole K strip of lhsT per M tile and of rhs per N tile.   (matmul_hoisted.cc)
//  blocked: M and N blocked 2 x 2 tiles for reuse; M a multiple of 256,
//           N of 1024.                                                  (matmul_blocked.cc)
//  fully optimised: M, N and K blocked (tiles per block below), large DMAs, results
//           accumulated across K blocks in SBUF (bf16, as the tutorial).
//           (matmul_fully_optimized.cc)
isa::Program matmul_tiled(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n);
isa::Program matmul_hoisted(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n);
isa::Program matmul_blocked(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n);
struct MatmulBlocks {
  int64_t tiles_m = 16, tiles_n = 2, tiles_k = 8;  // block 2048 x 1024 x 1024 (the tutorial's)
};
isa::Program matmul_fully_optimized(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n,
                                    MatmulBlocks blocks = {});

// y[rows, cols] = softmax over each row of x (fp32 in and out).
isa::Program softmax(const arch::ChipSpec& chip, int64_t rows, int64_t cols);
// y = (x - mean) / sqrt(var + eps) * gamma + beta per row (population variance); fp32.
isa::Program layernorm(const arch::ChipSpec& chip, int64_t rows, int64_t cols, double eps = 1e-5);
// y = x / sqrt(mean(x^2) + eps) * gamma per row; fp32.
isa::Program rmsnorm(const arch::ChipSpec& chip, int64_t rows, int64_t cols, double eps = 1e-6);
// One head of self-attention, flash style: out[S, d] (fp32) = softmax(q k^T / sqrt(d)) v with
// inputs qT[d, S], kT[d, S] (transposed, as TensorE takes them) and v[S, d] in bf16, an online
// softmax over key blocks of 512 (or 128) and an optional causal mask. S a multiple of 128,
// d <= 128.
isa::Program attention(const arch::ChipSpec& chip, int64_t seq, int64_t d_head, bool causal);

// SPMD over the physical cores of a logical core (chip/spmd_run.h): program `program_id` of
// `num_programs` (1 or 2). result[M, N] (fp32) = lhsT[K, M].T @ rhs[K, N] split along K, the
// partial sums traded with sendrecv, a core_barrier at the end. M <= 128, N <= 512 a multiple
// of the cores, K a multiple of 128 x cores. (matmul_lnc.cc)
isa::Program matmul_lnc(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n,
                        int program_id = 0, int num_programs = 1);

}  // namespace trnsim::examples
