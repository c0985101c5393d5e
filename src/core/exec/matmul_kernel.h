// The PE array's arithmetic, as trnsim assumes it (the real order and rounding are not public,
// HARDWARE.md s11 item 2):
//
//   out[m][n] = ((((+0 + p_0) + p_1) + ...) + p_{K-1}),   p_k = w[k][m] * x[k][n]
//
// i.e. the partial sum enters the first PE row as +0 and each PE row adds its product, k
// ascending (partition order; for double-row FP8 the first 128-row half, then the second).
// Each product is rounded to FP32 (exact for bf16, fp16, tf32 and fp8 inputs, whose
// significand products fit in 24 bits), and each addition is an FP32 round-to-nearest-even
// add (no fused multiply-add, no wider accumulator).
#pragma once

#include <cstdint>

namespace trnsim::core {

// w: [K][M], x: [K][N], out: [M][N]; all row-major, contiguous.
void matmul_fp32(const float* w, const float* x, int64_t K, int64_t M, int64_t N, float* out);

}  // namespace trnsim::core
