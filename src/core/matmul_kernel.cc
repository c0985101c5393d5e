// Blocked so that a 4 x 16 block of outputs stays in registers while k runs over the whole
// contraction: each output still sees its products in k order, one FP32 add at a time, which
// is the documented order; blocking only changes which outputs are computed together.
#include "core/matmul_kernel.h"

// Products and sums are separate statements, and contraction into FMA is off (the ISO
// default of GCC; clang needs the pragma): an FMA would round once where the documented order
// rounds twice. A core test checks a case where the two differ.
#ifdef __clang__
#pragma clang fp contract(off)
#endif

namespace trnsim::core {

namespace {

constexpr int64_t kMb = 4, kNb = 16;

// Full kMb x kNb block at (m0, n0).
inline void block(const float* wt, const float* x, int64_t K, int64_t N, int64_t m0, int64_t n0,
                  float* out) {
  float acc[kMb][kNb] = {};
  for (int64_t k = 0; k < K; ++k) {
    const float* xr = x + k * N + n0;
    for (int64_t i = 0; i < kMb; ++i) {
      const float wv = wt[(m0 + i) * K + k];
      for (int64_t j = 0; j < kNb; ++j) {
        const float prod = wv * xr[j];
        acc[i][j] = acc[i][j] + prod;
      }
    }
  }
  for (int64_t i = 0; i < kMb; ++i)
    for (int64_t j = 0; j < kNb; ++j) out[(m0 + i) * N + n0 + j] = acc[i][j];
}

// Any rectangle (the edges), one output at a time.
void edge(const float* wt, const float* x, int64_t K, int64_t N, int64_t m0, int64_t m1, int64_t n0,
          int64_t n1, float* out) {
  for (int64_t m = m0; m < m1; ++m)
    for (int64_t n = n0; n < n1; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float prod = wt[m * K + k] * x[k * N + n];
        acc = acc + prod;
      }
      out[m * N + n] = acc;
    }
}

}  // namespace

void matmul_fp32(const float* w, const float* x, int64_t K, int64_t M, int64_t N, float* out,
                 float* wt) {
  for (int64_t k = 0; k < K; ++k)
    for (int64_t m = 0; m < M; ++m) wt[m * K + k] = w[k * M + m];
  const int64_t mf = M - M % kMb, nf = N - N % kNb;
  for (int64_t m0 = 0; m0 < mf; m0 += kMb)
    for (int64_t n0 = 0; n0 < nf; n0 += kNb) block(wt, x, K, N, m0, n0, out);
  edge(wt, x, K, N, 0, mf, nf, N, out);
  edge(wt, x, K, N, mf, M, 0, N, out);
}

}  // namespace trnsim::core
