// The linear kernel against fp64 references: every fusion option, tilings, K in chunks, packed
// weights (tolerances: ops_test_util.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/timing/timing_run.h"
#include "numerics/convert.h"
#include "ops/ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class LinearTest : public OpsTest {};

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

double round_to(const num::Format& f, double x) {
  return num::decode(f, num::encode(f, x, num::Rounding::kNearestEven, 0, {}));
}

// Quantized weights (s.weight_dtype): each weight becomes codes of the format (int8: integers
// in [-127, 127]; FP8: multiples of 1/8 in [-8, 8] rounded to the format) and a power-of-two
// scale per column (2^-11 or 2^-12 for int8, 2^-7 or 2^-8 for FP8, so |w| stays <= 1/16 as
// unquantized), written as w_scale (w_gate_scale, w_up_scale). `in` keeps the codes times the
// scales, exact in fp32, for the reference; returns what the kernel reads.
Inputs quantize_weights(const ops::LinearSpec& s, Inputs& in, uint64_t seed) {
  Inputs q = in;
  if (!s.weight_dtype) return q;
  const num::Format f = *s.weight_dtype;
  const bool int8 = f.kind == num::Kind::kInt;
  const int64_t K = s.in, N = s.out;
  for (const char* w : {"w", "w_gate", "w_up"}) {
    if (!in.contains(w)) continue;
    const std::vector<float> v = values(K * N, seed++, 1.0f);
    std::vector<float> codes(v.size()), scale(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n)
      scale[static_cast<size_t>(n)] = std::ldexp(1.0f, (int8 ? -11 : -7) - static_cast<int>(n % 2));
    for (size_t i = 0; i < v.size(); ++i) {
      codes[i] = static_cast<float>(int8 ? std::round(v[i] * 127.0) : round_to(f, v[i] * 8.0));
      in[w][i] = codes[i] * scale[i % static_cast<size_t>(N)];
    }
    q[w] = codes;
    q[std::string(w) + "_scale"] = scale;
  }
  return q;
}

void check_linear(const arch::ChipSpec& spec, const ops::LinearSpec& s, uint64_t seed) {
  const isa::Program p = ops::linear(spec, s);
  expect_race_free(p, spec);
  Inputs in = linear_inputs(s, seed);
  Inputs packed = quantize_weights(s, in, seed + 100);
  // The kernel reads w in the packed layout; the reference [K, N].
  if (s.packed_weights)
    for (const char* w : {"w", "w_gate", "w_up"})
      if (in.contains(w)) packed[w] = ops::pack_linear_weights(spec, s, packed.at(w));
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

TEST_P(LinearTest, Linear) {
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
TEST_P(LinearTest, LinearWideTiling) {
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
TEST_P(LinearTest, LinearWeightsInKChunks) {
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

// Weights first (LinearSpec::weights_first, as a segment of a compiled graph emits a linear
// after another kernel): the first weight blocks load before x, into the buffers the loops
// then use, for every layout: rows, K in chunks, columns, weight-stationary columns (with a
// GLU), packed and as given. The values are the kernel's.
TEST_P(LinearTest, LinearWeightsFirst) {
  const arch::ChipSpec& spec = chip(GetParam());
  struct Case {
    const char* label;
    std::function<void(ops::LinearSpec&)> set;
  };
  const std::vector<Case> cases{
      {"rows", [](ops::LinearSpec& s) { s.bias = true; }},
      {"rows glu packed",
       [](ops::LinearSpec& s) {
         s.act = Act::kGluSilu;
         s.packed_weights = true;
       }},
      {"K in chunks",
       [](ops::LinearSpec& s) {
         s.tokens = 300;
         s.in = 3000;
         s.act = Act::kGluSilu;
         s.tiling = {256, 512};
       }},
      {"columns",
       [](ops::LinearSpec& s) {
         s.tokens = 5;
         s.in = 384;
         s.norm = Norm::kRms;
         s.tiling = {128, 512, true};
       }},
      {"weight-stationary columns glu",
       [](ops::LinearSpec& s) {
         s.tokens = 5;
         s.in = 384;
         s.out = 768;
         s.act = Act::kGluSilu;
         s.bias = true;
         s.tiling = {128, 512, true, true};
       }},
  };
  uint64_t seed = 900;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    ops::LinearSpec s = linear_base();
    c.set(s);
    s.weights_first = true;
    check_linear(spec, s, seed += 10);
  }
}

// Packed weights (the model compiler's layout): plain, GLU with a bias, and K in chunks.
TEST_P(LinearTest, LinearPackedWeights) {
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

// Weight-only quantization (NxD Inference's quantized linears): int8 codes cast to bf16 by the
// loading DMA, FP8 codes (the generation's e4m3) multiplied as they are, per-column scales on
// the accumulator; plain, with a bias and an activation, a GLU, packed and in the column
// layout. And the weight stream is one byte an element: half the bf16 kernel's HBM reads.
TEST_P(LinearTest, LinearQuantizedWeights) {
  const arch::ChipSpec& spec = chip(GetParam());
  const num::Format fp8 = spec.numerics.tensor_fp8_formats.front() == "fp8_e4m3fn"
                              ? num::fp8_e4m3fn()
                              : num::fp8_e4m3();
  for (const num::Format wf : {num::int_format(num::Dtype::kInt8), fp8}) {
    const std::vector<LinearCase> cases{
        {"plain", [](ops::LinearSpec&) {}},
        {"bias gelu", [](ops::LinearSpec& s) { s.bias = true, s.act = Act::kGelu; }},
        {"silu", [](ops::LinearSpec& s) { s.act = Act::kSilu; }},
        {"swiglu rmsnorm packed",
         [](ops::LinearSpec& s) {
           s.act = Act::kGluSilu, s.norm = Norm::kRms, s.packed_weights = true;
         }},
        {"columns", [](ops::LinearSpec& s) {
           s.tokens = 3, s.in = 384, s.tiling = {128, 512, true}, s.packed_weights = true;
         }}};
    for (const LinearCase& c : cases) {
      ops::LinearSpec s = linear_base();
      c.set(s);
      s.weight_dtype = wf;
      s.weight_scale = true;
      SCOPED_TRACE(::testing::Message() << wf.name() << " " << c.label);
      check_linear(spec, s, 41);
    }
  }
  // The HBM bytes of a decode-sized linear: the weights dominate, one byte instead of two.
  ops::LinearSpec s = linear_base();
  s.tokens = 1, s.in = 1024, s.out = 2048, s.packed_weights = true;
  const auto hbm_read = [&](const ops::LinearSpec& x) {
    return core::run_timing(spec, ops::linear(spec, x)).dma.hbm_read_bytes;
  };
  const int64_t bf16_bytes = hbm_read(s);
  s.weight_dtype = fp8;
  s.weight_scale = true;
  const int64_t fp8_bytes = hbm_read(s);
  EXPECT_NEAR(static_cast<double>(fp8_bytes), bf16_bytes / 2.0, 0.02 * bf16_bytes);
  s.weight_dtype = num::fp16();  // not a quantized format
  EXPECT_THROW(ops::linear(spec, s), InputError);
}

TEST_P(LinearTest, LinearTilingsAreLegal) {
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

// The column layout (a decode step's: x^T from HBM partition-major, the residual and norm in
// that layout, no transposes): every fusion on 1, 5 and 128 tokens, weights as given and
// packed; K = 384 (three features per partition). The candidates of a few tokens put it first.
TEST_P(LinearTest, LinearColumnLayout) {
  const arch::ChipSpec& spec = chip(GetParam());
  const std::vector<std::function<void(ops::LinearSpec&)>> sets{
      [](ops::LinearSpec&) {},
      [](ops::LinearSpec& s) { s.norm = Norm::kRms; },
      [](ops::LinearSpec& s) {
        s.norm = Norm::kLayer;
        s.bias = true;
        s.act = Act::kGelu;
      },
      [](ops::LinearSpec& s) {
        s.residual_in = true;
        s.norm = Norm::kRms;
        s.act = Act::kGluSilu;
        s.residual_out = true;
      },
      [](ops::LinearSpec& s) {
        s.residual_in = true;
        s.norm = Norm::kLayer;
        s.residual_out = true;
      },
  };
  uint64_t seed = 500;
  for (const int64_t tokens : {int64_t{1}, int64_t{5}, int64_t{128}})
    for (size_t i = 0; i < sets.size(); ++i)
      for (const bool packed : {false, true}) {
        ops::LinearSpec s = linear_base();
        s.tokens = tokens;
        s.in = 384;
        sets[i](s);
        s.packed_weights = packed;
        s.tiling = {128, 512, true};
        SCOPED_TRACE(::testing::Message()
                     << "tokens " << tokens << " case " << i << (packed ? " packed" : ""));
        check_linear(spec, s, seed += 10);
      }
  // w stationary: the same cases with y^T in PSUM, 640 columns (a 512-column block and a
  // block of one 128-column group; 1024-column blocks: one of five groups), and quantized.
  for (const int64_t tokens : {int64_t{1}, int64_t{5}, int64_t{128}})
    for (size_t i = 0; i < sets.size(); ++i) {
      ops::LinearSpec s = linear_base();
      s.tokens = tokens;
      s.in = 384;
      s.out = 640;
      sets[i](s);
      s.packed_weights = true;
      s.tiling = {128, tokens == 5 ? 1024 : 512, true, true};
      if (i == 2) {
        s.weight_dtype = num::int_format(num::Dtype::kInt8);
        s.weight_scale = true;
      }
      SCOPED_TRACE(::testing::Message() << "w stationary, tokens " << tokens << " case " << i);
      check_linear(spec, s, seed += 10);
    }
  {
    ops::LinearSpec s = linear_base();
    s.tokens = 2;
    s.in = 384;
    s.tiling = {128, 512, true, true};  // 700 columns: not whole groups of 128
    EXPECT_THROW(ops::linear(spec, s), InputError);
  }
  ops::LinearSpec s = linear_base();
  s.tokens = 4;
  s.in = 384;
  const std::vector<ops::LinearTiling> t = ops::linear_tilings(spec, s);
  ASSERT_FALSE(t.empty());
  EXPECT_TRUE(t.front().columns);
  s.tokens = 129;  // more than a partition's worth of tokens: rows only
  for (const ops::LinearTiling& c : ops::linear_tilings(spec, s)) EXPECT_FALSE(c.columns);
}

// The column layout with w in chunks of K tiles (a decode step's gate+up at a large hidden
// size: K = 3072, GLU), as given and packed.
TEST_P(LinearTest, LinearColumnLayoutWeightsInKChunks) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const bool packed : {false, true}) {
    ops::LinearSpec s = linear_base();
    s.tokens = 4;
    s.in = 3072;
    s.act = Act::kGluSilu;
    s.norm = Norm::kRms;
    s.residual_in = true;
    s.packed_weights = packed;
    s.tiling = {128, 512, true};
    const int64_t usable = spec.core.sbuf.usable_bytes_per_partition;
    ASSERT_GT(3 * (3072 / 128) * 512 * 2 * 2, usable * 2 / 5) << "not a chunked case";
    SCOPED_TRACE(packed ? "packed" : "as given");
    check_linear(spec, s, 41);
  }
}

// The two layouts compute the same sums in another order (fp32 partial sums per partition,
// then across partitions on TensorE; layer norm's variance from two passes instead of
// bn_stats), so the outputs agree to within one bf16 ulp of a rounding that falls the other
// way, on few elements; with these exact inputs a plain linear's sums are exact either way.
TEST_P(LinearTest, LinearColumnLayoutMatchesRows) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const Norm norm : {Norm::kNone, Norm::kRms, Norm::kLayer}) {
    ops::LinearSpec s = linear_base();
    s.tokens = 64;
    s.in = 512;
    s.out = 256;
    s.norm = norm;
    s.residual_in = norm != Norm::kNone;
    s.packed_weights = true;
    const Inputs in = linear_inputs(s, 77);
    auto packed = [&](const ops::LinearSpec& t) {
      Inputs p = in;
      p["w"] = ops::pack_linear_weights(spec, t, in.at("w"));
      return p;
    };
    s.tiling = {128, 512, false};
    auto rows = run(spec, ops::linear(spec, s), packed(s));
    s.tiling = {128, 512, true};
    auto cols = run(spec, ops::linear(spec, s), packed(s));
    ASSERT_EQ(rows["y"].size(), cols["y"].size());
    EXPECT_EQ(rows["h"], cols["h"]);
    int64_t differ = 0;
    double worst = 0;
    for (size_t i = 0; i < rows["y"].size(); ++i) {
      const double a = rows["y"][i], b = cols["y"][i];
      if (a != b) ++differ;
      worst = std::max(worst, std::fabs(a - b) / std::max({std::fabs(a), std::fabs(b), 1.0 / 64}));
    }
    SCOPED_TRACE(ops::name(norm));
    // A flipped normalised element moves an output that cancels to near zero by more than its
    // own ulp: layer norm, whose statistics differ the most, gets 2^-6 (both layouts are
    // checked against the fp64 reference in LinearColumnLayout and Linear).
    EXPECT_LE(worst, norm == Norm::kLayer ? 1.0 / 64 : 1.0 / 128);
    EXPECT_LE(differ, norm == Norm::kNone ? 0 : static_cast<int64_t>(rows["y"].size() / 100));
  }
}

TEST_P(LinearTest, LinearRefusesIllegalTilings) {
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
  // The column layout: K = 300 is not whole partitions, 200 tokens are more than one column.
  s.tiling = {128, 512, true};
  EXPECT_THROW(ops::linear(spec, s), InputError) << "columns, K 300";
  s.in = 256;
  EXPECT_THROW(ops::linear(spec, s), InputError) << "columns, 200 tokens";
  s.tokens = 100;
  EXPECT_NO_THROW(ops::linear(spec, s));
}

INSTANTIATE_TEST_SUITE_P(Generations, LinearTest, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
