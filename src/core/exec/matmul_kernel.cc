// Register-blocked: a block of 6 output rows x 2 vectors of columns stays in registers while
// k runs over the whole contraction, reading w where it lies (the 6 weights of one k are
// adjacent in [K][M], so no transposed copy is needed). Each output still sees its products in k
// order, one FP32 add at a time, which is the documented order; blocking and SIMD only change which
// outputs are computed together (every vector lane is an ordinary IEEE FP32 multiply or add). On
// x86-64 AVX-512 and AVX2 copies of the blocked loop are chosen at run time when the host has them
// (the widest takes the columns it tiles, a narrower one the rest); the baseline build is SSE2.
// Without FMA the arithmetic is bound by one multiply and one add per lane, so the vector width
// sets the speed (bench/functional_matmul.cc: BM_MatmulKernelTile).
#include "core/exec/matmul_kernel.h"

#include <cstring>
#include <vector>

// Products and sums are separate statements and contraction into FMA is off: an FMA would
// round once where the documented order rounds twice (a core test checks a case where the two
// differ). GCC contracts by default in C++ even in ISO mode, and the AVX-512 path enables FMA
// instructions (AVX2 alone does not), so both compilers are told.
#ifdef __clang__
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace trnsim::core {

namespace {

typedef float V4 __attribute__((vector_size(16)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V16 __attribute__((vector_size(64)));

constexpr int64_t kMb = 6;  // output rows per block: 12 vector accumulators + 3 temporaries

// One Mb x 2W block at (m0, n0); W = lanes of V. Always inlined so that it is compiled with
// the instruction set of the loop that calls it.
template <typename V, int64_t Mb>
[[gnu::always_inline]] inline void block(const float* w, const float* x, int64_t K, int64_t N,
                                         int64_t M, int64_t m0, int64_t n0, float* out) {
  constexpr int64_t W = sizeof(V) / sizeof(float);
  V a0[Mb] = {}, a1[Mb] = {};
  for (int64_t k = 0; k < K; ++k) {
    V x0, x1;
    std::memcpy(&x0, x + k * N + n0, sizeof(V));
    std::memcpy(&x1, x + k * N + n0 + W, sizeof(V));
    for (int64_t i = 0; i < Mb; ++i) {
      const float wk = w[k * M + m0 + i];
      const V p0 = wk * x0, p1 = wk * x1;
      a0[i] = a0[i] + p0;
      a1[i] = a1[i] + p1;
    }
  }
  for (int64_t i = 0; i < Mb; ++i) {
    std::memcpy(out + (m0 + i) * N + n0, &a0[i], sizeof(V));
    std::memcpy(out + (m0 + i) * N + n0 + W, &a1[i], sizeof(V));
  }
}

// The columns of [n_begin, n_end) that blocks of 2 vectors tile, from n_begin, in every row:
// blocks of kMb rows, then one block of the remaining rows. Returns the first column left.
template <typename V>
[[gnu::always_inline]] inline int64_t all_blocks(const float* w, const float* x, int64_t K,
                                                 int64_t N, int64_t M, int64_t n_begin,
                                                 int64_t n_end, float* out) {
  constexpr int64_t step = 2 * static_cast<int64_t>(sizeof(V) / sizeof(float));
  n_end -= (n_end - n_begin) % step;
  int64_t m0 = 0;
  for (; m0 + kMb <= M; m0 += kMb)
    for (int64_t n0 = n_begin; n0 < n_end; n0 += step) block<V, kMb>(w, x, K, N, M, m0, n0, out);
  for (int64_t n0 = n_begin; n0 < n_end; n0 += step) {
    switch (M - m0) {
      case 1:
        block<V, 1>(w, x, K, N, M, m0, n0, out);
        break;
      case 2:
        block<V, 2>(w, x, K, N, M, m0, n0, out);
        break;
      case 3:
        block<V, 3>(w, x, K, N, M, m0, n0, out);
        break;
      case 4:
        block<V, 4>(w, x, K, N, M, m0, n0, out);
        break;
      case 5:
        block<V, 5>(w, x, K, N, M, m0, n0, out);
        break;
      default:
        break;
    }
  }
  return n_end;
}

// One instruction set's copy of all_blocks.
using Blocks = int64_t (*)(const float*, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                           float*);

int64_t blocks_baseline(const float* w, const float* x, int64_t K, int64_t N, int64_t M,
                        int64_t n_begin, int64_t n_end, float* out) {
  return all_blocks<V4>(w, x, K, N, M, n_begin, n_end, out);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TRNSIM_HAVE_X86_PATHS 1
[[gnu::target("avx2")]] int64_t blocks_avx2(const float* w, const float* x, int64_t K, int64_t N,
                                            int64_t M, int64_t n_begin, int64_t n_end, float* out) {
  return all_blocks<V8>(w, x, K, N, M, n_begin, n_end, out);
}
[[gnu::target("avx512f")]] int64_t blocks_avx512(const float* w, const float* x, int64_t K,
                                                 int64_t N, int64_t M, int64_t n_begin,
                                                 int64_t n_end, float* out) {
  return all_blocks<V16>(w, x, K, N, M, n_begin, n_end, out);
}
#endif

// The blocked loops this host runs, widest first, ending with the baseline.
std::vector<Blocks> host_blocks() {
  std::vector<Blocks> b;
#ifdef TRNSIM_HAVE_X86_PATHS
  if (__builtin_cpu_supports("avx512f")) b.push_back(blocks_avx512);
  if (__builtin_cpu_supports("avx2")) b.push_back(blocks_avx2);
#endif
  b.push_back(blocks_baseline);
  return b;
}

// Any rectangle (the edges), one output at a time.
void edge(const float* w, const float* x, int64_t K, int64_t N, int64_t M, int64_t m0, int64_t m1,
          int64_t n0, int64_t n1, float* out) {
  for (int64_t m = m0; m < m1; ++m)
    for (int64_t n = n0; n < n1; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float prod = w[k * M + m] * x[k * N + n];
        acc = acc + prod;
      }
      out[m * N + n] = acc;
    }
}

}  // namespace

void matmul_fp32(const float* w, const float* x, int64_t K, int64_t M, int64_t N, float* out) {
  static const std::vector<Blocks> blocks = host_blocks();
  int64_t n0 = 0;
  for (Blocks b : blocks) n0 = b(w, x, K, N, M, n0, N, out);
  edge(w, x, K, N, M, 0, M, n0, N, out);
}

}  // namespace trnsim::core
