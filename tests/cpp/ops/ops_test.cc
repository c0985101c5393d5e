// The op library (src/ops) on trn1, trn2 and trn3: every op run through the functional runner
// against fp64 references computed here (never with trnsim's numerics), on shapes with partial
// tiles (tokens, K, PSUM banks, sequence), and every program checked race-free.
//
// Inputs are exact in bf16 (multiples of 1/64 scaled by powers of two), so the reference sees
// what the kernel reads; the reference rounds to bf16 where the kernel does (the normalised x
// before the matmul, q and k after their norm and rotation, each result leaving the kernel).
// Tolerances, per element, |got - want| <= rel * max(|want|, floor):
//   linear     rel 1e-2, floor 0.1 (outputs of order 1). Both sides round the same value to
//              bf16, so they differ only where the kernel's fp32 and the reference's fp64 fall
//              on either side of a rounding boundary: one bf16 ulp, 2^-8..2^-7 (0.4-0.8%) of
//              the value; 1e-2 passes one ulp and fails most two-ulp errors. A flipped bf16
//              rounding of one normalised x moves y by ~2^-8 * |w| ~ 2e-4 absolute, under the
//              floor's 1e-3. With residual_out the kernel rounds y before adding r, so one
//              ulp of that y counts too (the magnitude is max(|y + r|, |y|)).
//   norm       rel 1e-2, floor 1e-2: one ulp as above; near zero the fp32 statistics err by
//              ~1e-6, far under 1e-4.
//   attention  rel 2e-2, floor 0.25: the probabilities are rounded to bf16 (2^-9 relative each)
//              before the PV matmul while the row sums stay fp32, an error of at most
//              2 * 2^-9 * max|v| ~ 0.004 absolute (|v| <= 1), under the floor's 0.005; above it
//              the output's own rounding (<= one ulp) dominates.
//   embedding  exact (a gather is a copy; a position row added is a sum exact in bf16).
#include "ops/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/race/race_check.h"
#include "kernel/kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using ops::Act;
using ops::Norm;
using Inputs = std::map<std::string, std::vector<float>>;

// ---------------------------------------------------------------- helpers

// Multiples of 1/64 in [-1, 1] times `scale` (a power of two keeps them exact in bf16), plus
// `offset`.
std::vector<float> values(int64_t n, uint64_t seed, float scale, float offset = 0.0f) {
  std::vector<float> v = sixty_fourths(static_cast<size_t>(n), seed);
  for (float& x : v) x = x * scale + offset;
  return v;
}

double bf(double x) { return round_bf16(static_cast<float>(x)); }

void expect_race_free(const isa::Program& p, const arch::ChipSpec& spec) {
  const core::RaceReport races = core::check_races(p, spec, {200000});
  EXPECT_TRUE(races.clean()) << core::format_race_report(races);
}

// Every element within rel * max(|want|, |mag|, floor) (mag: a magnitude the rounding error
// scales with other than the result's, when given); the message names the first mismatch as
// [row, col] of a `cols`-wide tensor, and the largest relative error.
::testing::AssertionResult close(const std::vector<float>& got, const std::vector<double>& want,
                                 int64_t cols, double rel, double floor,
                                 const std::vector<double>* mag = nullptr) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "got " << got.size() << " elements, want " << want.size();
  size_t bad = 0, first = got.size();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double m = std::max(std::fabs(want[i]), floor);
    if (mag != nullptr) m = std::max(m, (*mag)[i]);
    const double r = std::fabs(static_cast<double>(got[i]) - want[i]) / m;
    if (!(r <= worst)) worst = r;
    if (!(r <= rel)) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const auto c = static_cast<size_t>(cols);
  return ::testing::AssertionFailure()
         << bad << " of " << got.size() << " elements off by more than " << rel
         << " relative; first [" << first / c << ", " << first % c << "]: want " << want[first]
         << ", got " << got[first] << "; worst relative error " << worst;
}

::testing::AssertionResult equal(const std::vector<float>& got, const std::vector<float>& want,
                                 int64_t cols) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << "got " << got.size() << " elements, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      const auto c = static_cast<size_t>(cols);
      return ::testing::AssertionFailure() << "first mismatch [" << i / c << ", " << i % c
                                           << "]: want " << want[i] << ", got " << got[i];
    }
  return ::testing::AssertionSuccess();
}

// One row normalised in fp64: RMSNorm x / sqrt(mean(x^2) + eps) * gamma, LayerNorm
// (x - mean) / sqrt(var + eps) * gamma + beta (population variance).
std::vector<double> norm_row(Norm n, double eps, const float* x, int64_t f,
                             const std::vector<float>& gamma, const std::vector<float>* beta) {
  std::vector<double> y(static_cast<size_t>(f));
  if (n == Norm::kRms) {
    double ss = 0;
    for (int64_t i = 0; i < f; ++i) ss += double{x[i]} * x[i];
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(f) + eps);
    for (int64_t i = 0; i < f; ++i) y[i] = x[i] * rstd * gamma[i];
    return y;
  }
  double mean = 0, var = 0;
  for (int64_t i = 0; i < f; ++i) mean += x[i];
  mean /= static_cast<double>(f);
  for (int64_t i = 0; i < f; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(f);
  const double rstd = 1.0 / std::sqrt(var + eps);
  for (int64_t i = 0; i < f; ++i) y[i] = (x[i] - mean) * rstd * gamma[i] + (*beta)[i];
  return y;
}

double act_ref(Act a, double v) {
  switch (a) {
    case Act::kSilu:
    case Act::kGluSilu:
      return v / (1.0 + std::exp(-v));
    case Act::kGelu:
    case Act::kGluGelu:
      return 0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2));
    case Act::kGeluTanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
    }
    case Act::kRelu:
      return v > 0 ? v : 0.0;
    case Act::kNone:
      break;
  }
  return v;
}

// ---------------------------------------------------------------- linear

ops::LinearSpec linear_base() {
  ops::LinearSpec s;
  s.tokens = 200;  // a 72-token last tile
  s.in = 300;      // a 44-row last K tile
  s.out = 700;     // a 188-column last PSUM bank
  s.tiling = {128, 512};
  return s;
}

Inputs linear_inputs(const ops::LinearSpec& s, uint64_t seed) {
  const int64_t T = s.tokens, K = s.in, N = s.out;
  const bool glu = ops::is_glu(s.act);
  Inputs in;
  in["x"] = values(T * K, seed, 2.0f);                             // multiples of 1/32 in [-2, 2]
  if (s.residual_in) in["delta"] = values(T * K, seed + 1, 1.0f);  // x + delta exact in bf16
  if (s.norm != Norm::kNone) in["gamma"] = values(K, seed + 2, 0.5f, 1.0f);
  if (s.norm == Norm::kLayer) in["beta"] = values(K, seed + 3, 0.25f);
  // |w| <= 1/16: y = x @ w has a standard deviation of ~0.6 over K = 300.
  in[glu ? "w_gate" : "w"] = values(K * N, seed + 4, 1.0f / 16);
  if (glu) in["w_up"] = values(K * N, seed + 5, 1.0f / 16);
  if (s.bias) {
    in[glu ? "b_gate" : "b"] = values(N, seed + 6, 0.25f);
    if (glu) in["b_up"] = values(N, seed + 7, 0.25f);
  }
  if (s.residual_out) in["r"] = values(T * N, seed + 8, 1.0f);
  return in;
}

struct LinearRef {
  std::vector<float> h;     // x + delta (exact)
  std::vector<double> y;    // bf16-rounded result
  std::vector<double> mag;  // max(|y|, |y before the residual add|)
};

LinearRef linear_ref(const ops::LinearSpec& s, const Inputs& in) {
  const int64_t T = s.tokens, K = s.in, N = s.out;
  const bool glu = ops::is_glu(s.act);
  LinearRef ref;
  std::vector<float> xin = in.at("x");
  if (s.residual_in) {
    const std::vector<float>& d = in.at("delta");
    for (size_t i = 0; i < xin.size(); ++i) xin[i] = static_cast<float>(double{xin[i]} + d[i]);
    ref.h = xin;  // the sums are exact in bf16
  }
  // The normalised x, rounded to bf16 as the kernel stores it before the matmul.
  std::vector<double> xn(xin.begin(), xin.end());
  if (s.norm != Norm::kNone) {
    const std::vector<float>* beta = s.norm == Norm::kLayer ? &in.at("beta") : nullptr;
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<double> row = norm_row(s.norm, s.eps, &xin[t * K], K, in.at("gamma"), beta);
      for (int64_t k = 0; k < K; ++k) xn[t * K + k] = bf(row[k]);
    }
  }
  const std::vector<float>& w = in.at(glu ? "w_gate" : "w");
  const std::vector<float>& w_up = glu ? in.at("w_up") : w;
  ref.y.resize(static_cast<size_t>(T * N));
  ref.mag.resize(ref.y.size());
  std::vector<double> a(static_cast<size_t>(N)), u(static_cast<size_t>(N));
  for (int64_t t = 0; t < T; ++t) {
    std::fill(a.begin(), a.end(), 0.0);
    std::fill(u.begin(), u.end(), 0.0);
    for (int64_t k = 0; k < K; ++k) {
      const double xv = xn[t * K + k];
      for (int64_t n = 0; n < N; ++n) a[n] += xv * w[k * N + n];
      if (glu)
        for (int64_t n = 0; n < N; ++n) u[n] += xv * w_up[k * N + n];
    }
    for (int64_t n = 0; n < N; ++n) {
      double g = a[n], up = u[n];
      if (s.bias) {
        g += in.at(glu ? "b_gate" : "b")[n];
        if (glu) up += in.at("b_up")[n];
      }
      double y = glu ? act_ref(s.act, g) * up : act_ref(s.act, g);
      y = bf(y);
      const size_t i = static_cast<size_t>(t * N + n);
      ref.mag[i] = std::fabs(y);
      if (s.residual_out) y = bf(y + in.at("r")[i]);  // the kernel adds r to the rounded y
      ref.y[i] = y;
      ref.mag[i] = std::max(ref.mag[i], std::fabs(y));
    }
  }
  return ref;
}

struct LinearCase {
  std::string label;
  std::function<void(ops::LinearSpec&)> set;
};

void check_linear(const arch::ChipSpec& spec, const ops::LinearSpec& s, uint64_t seed) {
  const isa::Program p = ops::linear(spec, s);
  expect_race_free(p, spec);
  const Inputs in = linear_inputs(s, seed);
  Inputs packed = in;  // the kernel reads w in the packed layout; the reference [K, N]
  if (s.packed_weights)
    for (const char* w : {"w", "w_gate", "w_up"})
      if (in.contains(w)) packed[w] = ops::pack_linear_weights(spec, s, in.at(w));
  auto out = run(spec, p, packed);
  const LinearRef ref = linear_ref(s, in);
  // The floor grows with sqrt(K / 300): an output sums K products of a normalised x rounded to
  // bf16 (each off by up to half an ulp, independently), so its absolute error grows like
  // sqrt(K) while the values of order 1 it is compared with do not.
  const double floor = 0.1 * std::max(1.0, std::sqrt(static_cast<double>(s.in) / 300.0));
  EXPECT_TRUE(close(out["y"], ref.y, s.out, 1e-2, floor, &ref.mag)) << "y";
  if (s.residual_in) {
    EXPECT_TRUE(equal(out["h"], ref.h, s.in)) << "h";
  }
}

class OpsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OpsTest, Linear) {
  const arch::ChipSpec& spec = chip(GetParam());
  const std::vector<LinearCase> cases{
      {"plain", [](ops::LinearSpec&) {}},
      {"rmsnorm", [](ops::LinearSpec& s) { s.norm = Norm::kRms; }},
      {"layernorm", [](ops::LinearSpec& s) { s.norm = Norm::kLayer; }},
      {"residual_in", [](ops::LinearSpec& s) { s.residual_in = true; }},
      {"residual_in rmsnorm",
       [](ops::LinearSpec& s) {
         s.residual_in = true;
         s.norm = Norm::kRms;
       }},
      {"bias", [](ops::LinearSpec& s) { s.bias = true; }},
      {"silu", [](ops::LinearSpec& s) { s.act = Act::kSilu; }},
      {"gelu", [](ops::LinearSpec& s) { s.act = Act::kGelu; }},
      {"gelu_tanh", [](ops::LinearSpec& s) { s.act = Act::kGeluTanh; }},
      {"relu", [](ops::LinearSpec& s) { s.act = Act::kRelu; }},
      {"bias gelu",
       [](ops::LinearSpec& s) {
         s.bias = true;
         s.act = Act::kGelu;
       }},
      {"swiglu", [](ops::LinearSpec& s) { s.act = Act::kGluSilu; }},
      {"geglu", [](ops::LinearSpec& s) { s.act = Act::kGluGelu; }},
      {"swiglu bias",
       [](ops::LinearSpec& s) {
         s.act = Act::kGluSilu;
         s.bias = true;
       }},
      {"residual_out", [](ops::LinearSpec& s) { s.residual_out = true; }},
      {"layernorm residual_in bias silu residual_out",
       [](ops::LinearSpec& s) {
         s.norm = Norm::kLayer;
         s.residual_in = true;
         s.bias = true;
         s.act = Act::kSilu;
         s.residual_out = true;
       }},
      {"rmsnorm residual_in swiglu residual_out",
       [](ops::LinearSpec& s) {
         s.norm = Norm::kRms;
         s.residual_in = true;
         s.act = Act::kGluSilu;
         s.residual_out = true;
       }},
  };
  uint64_t seed = 100;
  for (const LinearCase& c : cases) {
    SCOPED_TRACE(c.label);
    ops::LinearSpec s = linear_base();
    c.set(s);
    check_linear(spec, s, seed += 10);
  }
}

// Bigger blocks: two 128-token tiles and two PSUM banks per block; 300 tokens make a second,
// 44-token block. A GLU's 1024 columns need more banks than the generations have: refused.
TEST_P(OpsTest, LinearWideTiling) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const Act act : {Act::kNone, Act::kGluSilu})
    for (const int64_t tokens : {int64_t{200}, int64_t{300}}) {
      ops::LinearSpec s = linear_base();
      s.tokens = tokens;
      s.act = act;
      s.norm = Norm::kRms;
      s.tiling = {256, 1024};
      const int64_t banks = 2 * (s.tiling.out_block / 512) * (ops::is_glu(act) ? 2 : 1) + 2;
      if (banks > spec.core.psum.banks) {
        EXPECT_THROW(ops::linear(spec, s), InputError) << ops::name(act);
        continue;
      }
      SCOPED_TRACE(::testing::Message() << ops::name(act) << " tokens " << tokens);
      check_linear(spec, s, 7);
    }
}

// Wide K: the weight block of a GLU with 3000 input features does not fit SBUF whole, so w
// loads in chunks of K tiles and every token tile's accumulators stay open across them (a short
// last K tile of 56 rows, two token blocks, two output blocks).
TEST_P(OpsTest, LinearWeightsInKChunks) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::LinearSpec s = linear_base();
  s.tokens = 300;
  s.in = 3000;
  s.act = Act::kGluSilu;
  s.norm = Norm::kRms;
  s.tiling = {256, 512};
  const int64_t e = 2, usable = spec.core.sbuf.usable_bytes_per_partition;
  ASSERT_GT(2 * (3000 / 128 + 1) * 512 * e * 2, usable * 2 / 5) << "not a chunked case";
  check_linear(spec, s, 11);
}

// Packed weights (the model compiler's layout): plain, GLU with a bias, and K in chunks.
TEST_P(OpsTest, LinearPackedWeights) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const Act act : {Act::kNone, Act::kGluSilu}) {
    ops::LinearSpec s = linear_base();
    s.act = act;
    s.bias = act != Act::kNone;
    s.packed_weights = true;
    SCOPED_TRACE(ops::name(act));
    check_linear(spec, s, 31);
  }
  ops::LinearSpec s = linear_base();
  s.tokens = 300;
  s.in = 3000;
  s.act = Act::kGluSilu;
  s.tiling = {256, 512};
  s.packed_weights = true;
  SCOPED_TRACE("K in chunks");
  check_linear(spec, s, 37);
}

TEST_P(OpsTest, LinearTilingsAreLegal) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const Act act : {Act::kNone, Act::kGluSilu}) {
    SCOPED_TRACE(ops::name(act));
    ops::LinearSpec s = linear_base();
    s.act = act;
    const std::vector<ops::LinearTiling> tilings = ops::linear_tilings(spec, s);
    ASSERT_FALSE(tilings.empty());
    for (const ops::LinearTiling& t : tilings) {
      SCOPED_TRACE(::testing::Message() << "tiling " << t.token_block << " x " << t.out_block);
      EXPECT_EQ(t.token_block % spec.core.sbuf.partitions, 0);
      EXPECT_EQ(t.out_block % 512, 0);
      s.tiling = t;
      EXPECT_GT(ops::linear_sbuf_bytes(spec, s), 0);
      check_linear(spec, s, 3);
    }
  }
}

TEST_P(OpsTest, LinearRefusesIllegalTilings) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::LinearSpec s = linear_base();
  for (const int64_t tb : {int64_t{0}, int64_t{100}, int64_t{200}}) {
    s.tiling = {tb, 512};
    EXPECT_THROW(ops::linear(spec, s), InputError) << "token_block " << tb;
  }
  s.tiling = {128, 700};
  EXPECT_THROW(ops::linear(spec, s), InputError) << "out_block 700";
  // Two accumulators of out_block / 512 banks each plus two for the transposes.
  const int64_t banks = spec.core.psum.banks;
  s.tiling = {128, 512 * (banks / 2)};
  EXPECT_THROW(ops::linear(spec, s), InputError) << "out_block " << s.tiling.out_block;
  s.act = Act::kGluSilu;  // a GLU needs twice the accumulators
  s.tiling = {128, 512 * (banks / 4)};
  EXPECT_THROW(ops::linear(spec, s), InputError) << "GLU out_block " << s.tiling.out_block;
  s.tiling = {128, 512};
  EXPECT_NO_THROW(ops::linear(spec, s));
}

// ---------------------------------------------------------------- attention

struct AttnCase {
  bool causal, rope, qk_norm;
};

TEST_P(OpsTest, Attention) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t B = 2, S = 200, Hq = 4, Hkv = 2, d = 64, group = Hq / Hkv;
  const double theta = 10000.0;
  for (const AttnCase c :
       {AttnCase{true, false, false}, AttnCase{false, false, false}, AttnCase{true, true, true},
        AttnCase{false, true, true}, AttnCase{true, true, false}, AttnCase{true, false, true}}) {
    SCOPED_TRACE(::testing::Message()
                 << "causal " << c.causal << " rope " << c.rope << " qk_norm " << c.qk_norm);
    ops::AttentionSpec s;
    s.batch = B;
    s.seq = S;
    s.q_heads = Hq;
    s.kv_heads = Hkv;
    s.head_dim = d;
    s.causal = c.causal;
    s.rope = c.rope;
    s.qk_norm = c.qk_norm;
    const isa::Program p = ops::attention(spec, s);
    expect_race_free(p, spec);

    Inputs in;
    in["q"] = values(B * S * Hq * d, 61, 2.0f);
    in["k"] = values(B * S * Hkv * d, 62, 2.0f);
    in["v"] = values(B * S * Hkv * d, 63, 1.0f);
    if (c.qk_norm) {
      in["q_gamma"] = values(d, 64, 0.25f, 1.0f);
      in["k_gamma"] = values(d, 65, 0.25f, 1.0f);
    }
    if (c.rope) {  // Hugging Face Llama: inv_freq = theta^(-2i/d), cos(cat(angles, angles))
      std::vector<float> cs(static_cast<size_t>(S * d)), sn(cs.size());
      for (int64_t pos = 0; pos < S; ++pos)
        for (int64_t i = 0; i < d / 2; ++i) {
          const double inv_freq = std::pow(theta, -2.0 * static_cast<double>(i) / d);
          const double ang = static_cast<double>(pos) * inv_freq;
          for (const int64_t j : {i, i + d / 2}) {
            cs[pos * d + j] = static_cast<float>(std::cos(ang));
            sn[pos * d + j] = static_cast<float>(std::sin(ang));
          }
        }
      in["cos"] = cs;
      in["sin"] = sn;
    }
    auto out = run(spec, p, in);

    // q or k of one head prepared as the kernel does: RMS-normalised, rotated, rounded.
    auto prep = [&](const std::string& name, int64_t heads, int64_t b, int64_t pos, int64_t h) {
      const float* x = &in.at(name)[((b * S + pos) * heads + h) * d];
      std::vector<double> v(x, x + d);
      if (c.qk_norm) v = norm_row(Norm::kRms, s.eps, x, d, in.at(name + "_gamma"), nullptr);
      if (c.rope) {
        std::vector<double> r(static_cast<size_t>(d));
        for (int64_t i = 0; i < d; ++i) {
          const double rot = i < d / 2 ? -v[i + d / 2] : v[i - d / 2];
          r[i] = v[i] * in.at("cos")[pos * d + i] + rot * in.at("sin")[pos * d + i];
        }
        v = r;
      }
      if (c.qk_norm || c.rope)
        for (double& e : v) e = bf(e);
      return v;
    };
    std::vector<double> want(static_cast<size_t>(B * S * Hq * d));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t g = 0; g < Hkv; ++g) {
        std::vector<std::vector<double>> ks;
        for (int64_t pos = 0; pos < S; ++pos) ks.push_back(prep("k", Hkv, b, pos, g));
        for (int64_t h = g * group; h < (g + 1) * group; ++h)
          for (int64_t qi = 0; qi < S; ++qi) {
            const std::vector<double> qv = prep("q", Hq, b, qi, h);
            const int64_t keys = c.causal ? qi + 1 : S;
            std::vector<double> w(static_cast<size_t>(keys));
            double mx = -1e300, sum = 0;
            for (int64_t kj = 0; kj < keys; ++kj) {
              double dot = 0;
              for (int64_t i = 0; i < d; ++i) dot += qv[i] * ks[kj][i];
              w[kj] = dot * scale;
              mx = std::max(mx, w[kj]);
            }
            for (double& e : w) sum += (e = std::exp(e - mx));
            for (int64_t i = 0; i < d; ++i) {
              double o = 0;
              for (int64_t kj = 0; kj < keys; ++kj)
                o += w[kj] * in.at("v")[((b * S + kj) * Hkv + g) * d + i];
              want[((b * S + qi) * Hq + h) * d + i] = bf(o / sum);
            }
          }
      }
    EXPECT_TRUE(close(out["out"], want, Hq * d, 2e-2, 0.25));
  }
}

// With a KV cache: the last S of L positions attend to the cache's earlier keys (already
// prepared) and their own (prepared and written into the cache). Every row is computed by the
// same per-row steps over the same key blocks as in one pass over all L positions, so the
// outputs match that pass exactly; the cache the kernel writes matches the keys it prepared.
TEST_P(OpsTest, AttentionWithKvCache) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t B = 2, L = 200, Hq = 4, Hkv = 2, d = 64;
  ops::AttentionSpec full;
  full.batch = B;
  full.seq = L;
  full.q_heads = Hq;
  full.kv_heads = Hkv;
  full.head_dim = d;
  full.rope = full.qk_norm = true;
  Inputs in;
  in["q"] = values(B * L * Hq * d, 71, 2.0f);
  in["k"] = values(B * L * Hkv * d, 72, 2.0f);
  in["v"] = values(B * L * Hkv * d, 73, 1.0f);
  in["q_gamma"] = values(d, 74, 0.25f, 1.0f);
  in["k_gamma"] = values(d, 75, 0.25f, 1.0f);
  in["cos"] = values(L * d, 76, 1.0f);
  in["sin"] = values(L * d, 77, 1.0f);
  const auto want = run(spec, ops::attention(spec, full), in);
  // The whole sequence through the cache path (nothing cached yet): the prepared keys.
  ops::AttentionSpec all_new = full;
  all_new.kv_cache = true;
  all_new.kv_seq = L;
  Inputs in0 = in;
  in0["k_cache"] = std::vector<float>(in["k"].size(), 0.0f);
  in0["v_cache"] = std::vector<float>(in["v"].size(), 0.0f);
  const auto prepared = run(spec, ops::attention(spec, all_new), in0);
  EXPECT_TRUE(equal(prepared.at("out"), want.at("out"), Hq * d));
  EXPECT_TRUE(equal(prepared.at("v_cache"), in["v"], Hkv * d));
  for (const int64_t S : {int64_t{1}, int64_t{37}}) {
    SCOPED_TRACE(::testing::Message() << S << " new tokens");
    const int64_t off = L - S;
    ops::AttentionSpec s = all_new;
    s.seq = S;
    const isa::Program p = ops::attention(spec, s);
    expect_race_free(p, spec);
    auto rows = [&](const std::vector<float>& t, int64_t width, bool tail) {
      std::vector<float> out;  // per sequence: rows [off, L) (tail) or [0, off) then zeros
      for (int64_t b = 0; b < B; ++b)
        for (int64_t r = 0; r < L; ++r) {
          const bool is_tail = r >= off;
          if (tail && !is_tail) continue;
          for (int64_t i = 0; i < width; ++i)
            out.push_back(tail || !is_tail ? t[(b * L + r) * width + i] : 0.0f);
        }
      return out;
    };
    Inputs ins;
    ins["q"] = rows(in["q"], Hq * d, true);
    ins["k"] = rows(in["k"], Hkv * d, true);
    ins["v"] = rows(in["v"], Hkv * d, true);
    ins["k_cache"] = rows(prepared.at("k_cache"), Hkv * d, false);
    ins["v_cache"] = rows(in["v"], Hkv * d, false);
    for (const char* n : {"q_gamma", "k_gamma", "cos", "sin"}) ins[n] = in[n];
    const auto got = run(spec, p, ins);
    EXPECT_TRUE(equal(got.at("out"), rows(want.at("out"), Hq * d, true), Hq * d)) << "out";
    EXPECT_TRUE(equal(got.at("k_cache"), prepared.at("k_cache"), Hkv * d)) << "k_cache";
    EXPECT_TRUE(equal(got.at("v_cache"), in["v"], Hkv * d)) << "v_cache";
  }
}

TEST_P(OpsTest, AttentionRefusesUnevenGroups) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::AttentionSpec s;
  s.seq = 128;
  s.q_heads = 3;
  s.kv_heads = 2;
  s.head_dim = 64;
  EXPECT_THROW(ops::attention(spec, s), InputError);
  s.q_heads = 4;
  EXPECT_NO_THROW(ops::attention(spec, s));
}

// ---------------------------------------------------------------- norm

TEST_P(OpsTest, NormOp) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t T = 130, F = 700;  // a 2-token last tile, two bn_stats chunks
  for (const Norm n : {Norm::kRms, Norm::kLayer})
    for (const bool residual : {false, true}) {
      SCOPED_TRACE(::testing::Message() << ops::name(n) << " residual_in " << residual);
      ops::NormSpec s;
      s.tokens = T;
      s.features = F;
      s.norm = n;
      s.residual_in = residual;
      const isa::Program p = ops::norm(spec, s);
      expect_race_free(p, spec);
      Inputs in;
      in["x"] = values(T * F, 71, 2.0f);
      if (residual) in["delta"] = values(T * F, 72, 1.0f);
      in["gamma"] = values(F, 73, 0.5f, 1.0f);
      if (n == Norm::kLayer) in["beta"] = values(F, 74, 0.25f);
      auto out = run(spec, p, in);
      std::vector<float> h = in["x"];
      if (residual)
        for (size_t i = 0; i < h.size(); ++i) h[i] += in["delta"][i];  // exact
      std::vector<double> want(h.size());
      const std::vector<float>* beta = n == Norm::kLayer ? &in["beta"] : nullptr;
      for (int64_t t = 0; t < T; ++t) {
        const std::vector<double> row = norm_row(n, s.eps, &h[t * F], F, in["gamma"], beta);
        for (int64_t f = 0; f < F; ++f) want[t * F + f] = bf(row[f]);
      }
      EXPECT_TRUE(close(out["y"], want, F, 1e-2, 1e-2)) << "y";
      if (residual) {
        EXPECT_TRUE(equal(out["h"], h, F)) << "h";
      }
    }
}

TEST_P(OpsTest, NormRefusesNone) {
  ops::NormSpec s;
  s.tokens = 130;
  s.features = 700;
  s.norm = Norm::kNone;
  EXPECT_THROW(ops::norm(chip(GetParam()), s), InputError);
}

// ---------------------------------------------------------------- embedding

TEST_P(OpsTest, Embedding) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t T = 200, V = 50, H = 96, P = 300;
  for (const int64_t positions : {int64_t{0}, P}) {
    SCOPED_TRACE(::testing::Message() << "positions " << positions);
    ops::EmbeddingSpec s;
    s.tokens = T;
    s.vocab = V;
    s.hidden = H;
    s.positions = positions;
    const isa::Program p = ops::embedding(spec, s);
    expect_race_free(p, spec);
    Inputs in;
    in["ids"] = small_ints(T, 0, static_cast<int>(V - 1), 81);
    in["table"] = values(V * H, 82, 1.0f);
    if (positions > 0) {
      in["pos_ids"] = small_ints(T, 0, static_cast<int>(P - 1), 83);
      in["pos_table"] = values(P * H, 84, 1.0f);
    }
    auto out = run(spec, p, in);
    std::vector<float> want(static_cast<size_t>(T * H));
    for (int64_t t = 0; t < T; ++t) {
      const auto id = static_cast<int64_t>(in["ids"][t]);
      for (int64_t j = 0; j < H; ++j) {
        double v = in["table"][id * H + j];
        if (positions > 0) v += in["pos_table"][static_cast<int64_t>(in["pos_ids"][t]) * H + j];
        want[t * H + j] = static_cast<float>(v);  // multiples of 1/64 in [-2, 2]: exact
      }
    }
    EXPECT_TRUE(equal(out["y"], want, H));
  }
}

// Elementwise add, mul and each activation on [130, 300] (a short last tile): the result is
// the fp64 value rounded to bf16, within one bf16 ulp (the activations are evaluated in fp32).
TEST_P(OpsTest, Elementwise) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t T = 130, F = 300;
  struct Case {
    ops::Elementwise op;
    Act act;
  };
  for (const Case c :
       {Case{ops::Elementwise::kAdd, Act::kNone}, Case{ops::Elementwise::kMul, Act::kNone},
        Case{ops::Elementwise::kAct, Act::kSilu}, Case{ops::Elementwise::kAct, Act::kGelu},
        Case{ops::Elementwise::kAct, Act::kGeluTanh}, Case{ops::Elementwise::kAct, Act::kRelu}}) {
    SCOPED_TRACE(::testing::Message() << static_cast<int>(c.op) << " " << ops::name(c.act));
    ops::ElementwiseSpec s;
    s.tokens = T;
    s.features = F;
    s.op = c.op;
    s.act = c.act;
    const isa::Program p = ops::elementwise(spec, s);
    expect_race_free(p, spec);
    Inputs in;
    in["a"] = values(T * F, 91, 2.0f);
    if (c.op != ops::Elementwise::kAct) in["b"] = values(T * F, 92, 2.0f);
    auto out = run(spec, p, in);
    std::vector<double> want(static_cast<size_t>(T * F));
    for (size_t i = 0; i < want.size(); ++i) {
      const double a = in["a"][i];
      const double v = c.op == ops::Elementwise::kAdd   ? a + in["b"][i]
                       : c.op == ops::Elementwise::kMul ? a * in["b"][i]
                                                        : act_ref(c.act, a);
      want[i] = bf(v);
    }
    EXPECT_TRUE(close(out["y"], want, F, 1e-2, 1e-2));
  }
  ops::ElementwiseSpec bad;
  bad.tokens = 4;
  bad.features = 4;
  bad.op = ops::Elementwise::kAct;
  bad.act = Act::kGluSilu;
  EXPECT_THROW(ops::elementwise(spec, bad), InputError);
}

// The MoE router: top-k experts of distinct logits (a permutation of small integers, so the
// order is unambiguous) and the softmax of their logits; 8 experts (max8 takes them all) and
// 5 (padded to 8), top 2 and top 4.
TEST_P(OpsTest, Router) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t T = 150;
  for (const auto& [E, k] : std::vector<std::pair<int64_t, int64_t>>{{8, 2}, {5, 4}, {64, 8}}) {
    SCOPED_TRACE(::testing::Message() << E << " experts, top " << k);
    ops::RouterSpec s;
    s.tokens = T;
    s.experts = E;
    s.top_k = k;
    const isa::Program p = ops::router(spec, s);
    expect_race_free(p, spec);
    std::vector<float> logits(static_cast<size_t>(T * E));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; ++e)  // distinct per token: (e * 7 + t) mod E, scaled
        logits[t * E + e] = static_cast<float>((e * 7 + t) % E) * 0.25f - 2.0f;
    auto out = run(spec, p, {{"logits", logits}});
    for (int64_t t = 0; t < T; ++t) {
      std::vector<int64_t> order(static_cast<size_t>(E));
      for (int64_t e = 0; e < E; ++e) order[e] = e;
      std::sort(order.begin(), order.end(),
                [&](int64_t a, int64_t b) { return logits[t * E + a] > logits[t * E + b]; });
      double sum = 0;
      for (int64_t j = 0; j < k; ++j)
        sum += std::exp(logits[t * E + order[j]] - logits[t * E + order[0]]);
      for (int64_t j = 0; j < k; ++j) {
        ASSERT_EQ(static_cast<int64_t>(out["experts"][t * k + j]), order[j])
            << "token " << t << " rank " << j;
        const double want = std::exp(logits[t * E + order[j]] - logits[t * E + order[0]]) / sum;
        ASSERT_NEAR(out["weights"][t * k + j], want, 1e-5) << "token " << t << " rank " << j;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Generations, OpsTest, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
