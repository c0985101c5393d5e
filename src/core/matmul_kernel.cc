// Register-blocked: a block of 6 output rows x 2 vectors of columns stays in registers while
// k runs over the whole contraction. Each output still sees its products in k order, one FP32
// add at a time, which is the documented order; blocking and SIMD only change which outputs
// are computed together (every vector lane is an ordinary IEEE FP32 multiply or add). On x86-64
// an AVX2 copy of the blocked loop is chosen at run time when the host has AVX2; the baseline
// build is SSE2.
#include "core/matmul_kernel.h"

#include <cstring>

// Products and sums are separate statements and contraction into FMA is off (the ISO default
// of GCC; clang needs the pragma; the AVX2 path does not enable FMA instructions at all): an
// FMA would round once where the documented order rounds twice. A core test checks a case
// where the two differ.
#ifdef __clang__
#pragma clang fp contract(off)
#endif

namespace trnsim::core {

namespace {

typedef float V4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));

constexpr int64_t kMb = 6;  // output rows per block: 12 vector accumulators + 3 temporaries

// One Mb x 2W block at (m0, n0); W = lanes of V. Always inlined so that it is compiled with
// the instruction set of the loop that calls it.
template <typename V, int64_t Mb>
[[gnu::always_inline]] inline void block(const float* wt, const float* x, int64_t K, int64_t N,
                                         int64_t m0, int64_t n0, float* out) {
  constexpr int64_t W = sizeof(V) / sizeof(float);
  V a0[Mb] = {}, a1[Mb] = {};
  for (int64_t k = 0; k < K; ++k) {
    V x0, x1;
    std::memcpy(&x0, x + k * N + n0, sizeof(V));
    std::memcpy(&x1, x + k * N + n0 + W, sizeof(V));
    for (int64_t i = 0; i < Mb; ++i) {
      const float w = wt[(m0 + i) * K + k];
      const V p0 = w * x0, p1 = w * x1;
      a0[i] = a0[i] + p0;
      a1[i] = a1[i] + p1;
    }
  }
  for (int64_t i = 0; i < Mb; ++i) {
    std::memcpy(out + (m0 + i) * N + n0, &a0[i], sizeof(V));
    std::memcpy(out + (m0 + i) * N + n0 + W, &a1[i], sizeof(V));
  }
}

// Columns [0, nf) of every row: blocks of kMb rows, then one block of the remaining rows.
template <typename V>
[[gnu::always_inline]] inline void all_blocks(const float* wt, const float* x, int64_t K, int64_t N,
                                              int64_t M, int64_t nf, float* out) {
  constexpr int64_t step = 2 * static_cast<int64_t>(sizeof(V) / sizeof(float));
  int64_t m0 = 0;
  for (; m0 + kMb <= M; m0 += kMb)
    for (int64_t n0 = 0; n0 < nf; n0 += step) block<V, kMb>(wt, x, K, N, m0, n0, out);
  for (int64_t n0 = 0; n0 < nf; n0 += step) {
    switch (M - m0) {
      case 1:
        block<V, 1>(wt, x, K, N, m0, n0, out);
        break;
      case 2:
        block<V, 2>(wt, x, K, N, m0, n0, out);
        break;
      case 3:
        block<V, 3>(wt, x, K, N, m0, n0, out);
        break;
      case 4:
        block<V, 4>(wt, x, K, N, m0, n0, out);
        break;
      case 5:
        block<V, 5>(wt, x, K, N, m0, n0, out);
        break;
      default:
        break;
    }
  }
}

void blocks_baseline(const float* wt, const float* x, int64_t K, int64_t N, int64_t M, int64_t nf,
                     float* out) {
  all_blocks<V4>(wt, x, K, N, M, nf, out);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TRNSIM_HAVE_AVX2_PATH 1
[[gnu::target("avx2")]] void blocks_avx2(const float* wt, const float* x, int64_t K, int64_t N,
                                         int64_t M, int64_t nf, float* out) {
  all_blocks<V8>(wt, x, K, N, M, nf, out);
}
#endif

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
  int64_t step = 8;  // columns per baseline block (2 x 4 lanes)
  auto blocks = blocks_baseline;
#ifdef TRNSIM_HAVE_AVX2_PATH
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    step = 16;
    blocks = blocks_avx2;
  }
#endif
  const int64_t nf = N - N % step;
  blocks(wt, x, K, N, M, nf, out);
  edge(wt, x, K, N, 0, M, nf, N, out);
}

}  // namespace trnsim::core
