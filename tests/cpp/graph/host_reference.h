// Host references for the model tests, written from the Hugging Face modules and never with
// trnsim's numerics: double precision, rounded to bf16 where the ops kernels round (ops.h
// "Numerics"; golden_llama_test.cc lists the points), and to fp32 at the few steps whose fp32
// rounding decides a later bf16 rounding (RMSNorm statistics and scaling, RoPE).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

namespace trnsim::graph::reference {

using Mat = std::vector<double>;  // row-major

// bf16, round to nearest even, from the fp32 value the engine holds.
inline double bf(double x) {
  const auto f = static_cast<float>(x);
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return x;
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return static_cast<double>(std::bit_cast<float>(u));
}

inline Mat to_d(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// [T, K] @ [K, N], each result rounded by `round`.
inline Mat matmul(const Mat& x, const Mat& w, int64_t T, int64_t K, int64_t N) {
  Mat y(static_cast<size_t>(T * N), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < K; ++k) {
      const double a = x[static_cast<size_t>(t * K + k)];
      for (int64_t n = 0; n < N; ++n)
        y[static_cast<size_t>(t * N + n)] += a * w[static_cast<size_t>(k * N + n)];
    }
  return y;
}
// The same product as TensorE and PSUM compute it (exec_matmul.cc, matmul_common.h): x and w
// bf16, so each product is exact in fp32; each 128-row K tile summed in fp32 in partition
// order, the tiles accumulated in PSUM one fp32 add each. A tile holds K rows t * 128 + p,
// or in the linear's column layout (K a multiple of 128) rows p * K / 128 + t.
inline Mat matmul_fp32(const Mat& x, const Mat& w, int64_t T, int64_t K, int64_t N,
                       bool columns = false) {
  Mat y(static_cast<size_t>(T * N), 0.0);
  const int64_t tiles = (K + 127) / 128, kt = K / 128;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t j = 0; j < tiles; ++j) {
        float part = 0;
        for (int64_t p = 0; p < 128; ++p) {
          const int64_t k = columns ? p * kt + j : j * 128 + p;
          if (k >= K) break;
          const auto prod = static_cast<float>(x[static_cast<size_t>(t * K + k)] *
                                               w[static_cast<size_t>(k * N + n)]);
          part = p == 0 ? prod : part + prod;
        }
        acc = j == 0 ? part : acc + part;
      }
      y[static_cast<size_t>(t * N + n)] = acc;
    }
  return y;
}
inline Mat round_all(Mat m) {
  for (double& x : m) x = bf(x);
  return m;
}

// RMSNorm over each row, scaled by gamma, rounded to bf16 (the linear's normalised x tile).
// With `fp32`, the statistics and the scaling are rounded to fp32 as the engines round them
// (rows.h normalize_rows: the squares summed in order in fp32, rsqrt(ss * (1/F) + eps) rounded
// to fp32 with the immediates as fp32, then x * r and * gamma, each rounded to fp32); without
// it, in double. The two differ by about one fp32 ulp before the bf16 rounding, which flips
// about one normalised element in 2e4 to the neighbouring bf16 value.
// With `columns` (the linear's column layout, rows.h normalize_columns), the squares are
// summed in fp32 per partition over its F / 128 consecutive features, and those 128 partial
// sums in partition order (the ones matmul).
inline Mat rms_norm(const Mat& x, const Mat& gamma, int64_t T, int64_t F, double eps,
                    bool fp32 = true, bool columns = false) {
  Mat y(x.size());
  auto at = [&](int64_t t, int64_t f) { return x[static_cast<size_t>(t * F + f)]; };
  auto fsum = [&](int64_t t, int64_t f0, int64_t f1) {
    auto ss = static_cast<float>(at(t, f0) * at(t, f0));
    for (int64_t f = f0 + 1; f < f1; ++f) ss = ss + static_cast<float>(at(t, f) * at(t, f));
    return ss;
  };
  for (int64_t t = 0; t < T; ++t) {
    double r = 0;
    if (fp32) {
      float ss = 0;
      if (columns) {
        const int64_t kt = F / 128;
        ss = fsum(t, 0, kt);
        for (int64_t p = 1; p < 128; ++p) ss = ss + fsum(t, p * kt, (p + 1) * kt);
      } else {
        ss = fsum(t, 0, F);
      }
      r = static_cast<float>(
          1.0 / std::sqrt(static_cast<double>(ss) * static_cast<double>(static_cast<float>(
                                                        1.0 / static_cast<double>(F))) +
                          static_cast<double>(static_cast<float>(eps))));
    } else {
      double ss = 0;
      for (int64_t f = 0; f < F; ++f) ss += at(t, f) * at(t, f);
      r = 1.0 / std::sqrt(ss / static_cast<double>(F) + eps);
    }
    for (int64_t f = 0; f < F; ++f) {
      const double g = gamma[static_cast<size_t>(f)];
      y[static_cast<size_t>(t * F + f)] =
          fp32 ? bf(static_cast<float>(static_cast<float>(at(t, f) * r) * g))
               : bf(at(t, f) * r * g);
    }
  }
  return y;
}

inline Mat add_bf(const Mat& a, const Mat& b) {
  Mat y(a.size());
  for (size_t i = 0; i < a.size(); ++i) y[i] = bf(a[i] + b[i]);
  return y;
}

struct Rope {
  std::vector<double> cos, sin;  // [S, d/2]
};
inline Rope rope_tables(int64_t S, int64_t d, double theta) {
  Rope r;
  const int64_t half = d / 2;
  for (int64_t p = 0; p < S; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const auto inv = static_cast<float>(
          std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(d)));
      const float a = static_cast<float>(p) * inv;
      r.cos.push_back(static_cast<float>(std::cos(static_cast<double>(a))));
      r.sin.push_back(static_cast<float>(std::sin(static_cast<double>(a))));
    }
  return r;
}

// rotate-half RoPE of one head's row x[0..d), position p, rounded to bf16:
// x' = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]. The products and the sum are
// rounded to fp32 each, as the attention kernel's VectorE steps round them (x * cos, then
// - x2 * sin or + x1 * sin); in double they can differ by an fp32 ulp, which flips about one
// rotated element in 6e4 to the neighbouring bf16 value, and a flipped k moves the scores of
// every later query of its heads.
inline void rope_row(double* x, int64_t d, int64_t p, const Rope& r) {
  const int64_t half = d / 2;
  auto f = [](double v) { return static_cast<double>(static_cast<float>(v)); };
  std::vector<double> out(static_cast<size_t>(d));
  for (int64_t i = 0; i < half; ++i) {
    const double c = r.cos[static_cast<size_t>(p * half + i)];
    const double s = r.sin[static_cast<size_t>(p * half + i)];
    out[static_cast<size_t>(i)] = f(f(x[i] * c) - f(x[i + half] * s));
    out[static_cast<size_t>(i + half)] = f(f(x[i + half] * c) + f(x[i] * s));
  }
  for (int64_t i = 0; i < d; ++i) x[i] = bf(out[static_cast<size_t>(i)]);
}

// Causal GQA attention with RoPE over B sequences of S tokens, token-major q [B*S, Hq*d],
// k and v [B*S, Hkv*d]. The softmax runs as the kernel's online softmax over key blocks of
// bk = min(512, S rounded up to 128) keys, because that fixes where the probabilities are
// rounded: exp(s - running max) to bf16 per block, rescaled in fp32 by exp(old max - new max)
// with the row sum (unrounded). Mathematically it is the plain softmax.
inline Mat attention(Mat q, Mat k, const Mat& v, int64_t B, int64_t S, int64_t hq, int64_t hkv,
                     int64_t d, double theta) {
  const Rope r = rope_tables(S, d, theta);
  for (int64_t t = 0; t < B * S; ++t) {
    for (int64_t h = 0; h < hq; ++h)
      rope_row(&q[static_cast<size_t>(t * hq * d + h * d)], d, t % S, r);
    for (int64_t h = 0; h < hkv; ++h)
      rope_row(&k[static_cast<size_t>(t * hkv * d + h * d)], d, t % S, r);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const int64_t group = hq / hkv;
  const int64_t bk = std::min<int64_t>(512, (S + 127) / 128 * 128);
  Mat out(static_cast<size_t>(B * S * hq * d));
  std::vector<double> s(static_cast<size_t>(S)), acc(static_cast<size_t>(d));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / group;
      for (int64_t t = 0; t < S; ++t) {
        const size_t qrow = static_cast<size_t>((b * S + t) * hq * d + h * d);
        for (int64_t j = 0; j <= t; ++j) {
          double dot = 0;
          for (int64_t i = 0; i < d; ++i)
            dot += q[qrow + static_cast<size_t>(i)] *
                   k[static_cast<size_t>((b * S + j) * hkv * d + g * d + i)];
          s[static_cast<size_t>(j)] = dot * scale;
        }
        double m = -INFINITY, l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t k0 = 0; k0 <= t; k0 += bk) {
          const int64_t k1 = std::min(t + 1, k0 + bk);
          double m_new = m;
          for (int64_t j = k0; j < k1; ++j) m_new = std::max(m_new, s[static_cast<size_t>(j)]);
          const double alpha = std::exp(m - m_new);
          l *= alpha;
          for (double& a : acc) a *= alpha;
          for (int64_t j = k0; j < k1; ++j) {
            const double e = std::exp(s[static_cast<size_t>(j)] - m_new);
            l += e;
            const double p = bf(e);  // the probabilities TensorE multiplies by v
            for (int64_t i = 0; i < d; ++i)
              acc[static_cast<size_t>(i)] +=
                  p * v[static_cast<size_t>((b * S + j) * hkv * d + g * d + i)];
          }
          m = m_new;
        }
        for (int64_t i = 0; i < d; ++i)
          out[qrow + static_cast<size_t>(i)] = bf(acc[static_cast<size_t>(i)] / l);
      }
    }
  return out;
}

}  // namespace trnsim::graph::reference
