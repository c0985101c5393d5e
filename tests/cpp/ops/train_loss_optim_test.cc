// The loss and optimizer kernels (train_ops.h): cross_entropy and adamw against fp64
// references written here, on trn1, trn2 and trn3, every program checked race-free; adamw's
// stochastic rounding checked element by element and for determinism; and a timing sanity
// check per kernel against closed-form bounds.
//
// Tolerances:
//   loss (fp32)     rel 1e-4, floor 10 (1e-3 absolute for losses up to 10): lse sums up to
//                   ~4000 exps per chunk sequentially in fp32 (relative error of the sum
//                   <= ~4000 * 6e-8 = 2.4e-4 worst case, ~1e-5 typical), which moves ln(sum)
//                   by as much absolute.
//   dlogits (bf16)  rel 1e-2 of max(|want|, 1e-9): the reference rounds the fp64 value to bf16
//                   as the kernel rounds its fp32 one, so they differ by at most one bf16 ulp
//                   (2^-8..2^-7) where the two fall on either side of a rounding boundary; the
//                   kernel's fp32 softmax errs by ~1e-5 relative (lse's error above), far
//                   under. Ignored rows: exactly 0.
//   m, v (fp32)     rel 1e-6 of |b1 m| + |(1 - b1) g| (resp. of v, a sum of non-negative
//                   terms): two fp32 roundings and fp32 immediates (0.9f is 0.9 to 1.5e-8).
//   master (fp32)   4e-7 |master| + 1e-5 |update|: the decayed master rounds twice (the fp32
//                   decay factor, the product) and once more with the update added, each
//                   <= 2^-24 relative; the update's own error is ~1e-6 of it.
//   w (bf16)        exact: with stochastic rounding each element is one of the two bf16
//                   neighbours of the kernel's fp32 master (the master itself when it is a bf16
//                   value), without it the master rounded to nearest even.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/timing/timing_run.h"
#include "ops/train_ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class LossOptimTest : public OpsTest {};

// ---------------------------------------------------------------- cross entropy

struct CeRef {
  std::vector<double> loss, dlogits;  // dlogits rounded to bf16
};

// fp64 softmax cross-entropy of bf16 logits (as the kernel reads them).
CeRef ce_reference(const std::vector<float>& x, const std::vector<int>& labels, int64_t T,
                   int64_t V, double scale) {
  CeRef r;
  r.loss.assign(static_cast<size_t>(T), 0.0);
  r.dlogits.assign(static_cast<size_t>(T * V), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const int label = labels[static_cast<size_t>(t)];
    if (label < 0 || label >= V) continue;
    const float* row = &x[static_cast<size_t>(t * V)];
    double m = row[0];
    for (int64_t j = 1; j < V; ++j) m = std::max(m, static_cast<double>(row[j]));
    double sum = 0;
    for (int64_t j = 0; j < V; ++j) sum += std::exp(row[j] - m);
    const double lse = m + std::log(sum);
    r.loss[static_cast<size_t>(t)] = lse - row[label];
    for (int64_t j = 0; j < V; ++j)
      r.dlogits[static_cast<size_t>(t * V + j)] =
          bf((std::exp(row[j] - lse) - (j == label ? 1.0 : 0.0)) * scale);
  }
  return r;
}

TEST_P(LossOptimTest, CrossEntropy) {
  const arch::ChipSpec& spec = chip(GetParam());
  struct Case {
    int64_t T, V;
    double scale;
  };
  // One chunk; three chunks of 3001, 3001 and 2999 columns (9001 is no multiple of the chunk);
  // a negative scale.
  for (const Case cs :
       {Case{200, 1000, 1.0 / 200}, Case{200, 9001, 1.0 / 200}, Case{130, 300, -0.5}}) {
    const int64_t T = cs.T, V = cs.V;
    SCOPED_TRACE(::testing::Message() << "T " << T << " V " << V << " scale " << cs.scale);
    ops::CrossEntropySpec s;
    s.tokens = T;
    s.vocab = V;
    s.scale = cs.scale;
    const isa::Program p = ops::cross_entropy(spec, s);
    expect_race_free(p, spec);
    // Logits in [-4, 4], and in rows t % 3 == 1 the last chunk larger by 6, so the running
    // max moves (the online rescale); rounded to bf16, as the kernel stores them.
    std::vector<float> x = values(T * V, 101, 4.0f);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < V; ++j) {
        float& e = x[static_cast<size_t>(t * V + j)];
        if (t % 3 == 1 && j >= V - V / 4) e += 6.0f;
        e = round_bf16(e);
      }
    const std::vector<float> lab_f =
        small_ints(static_cast<size_t>(T), 0, static_cast<int>(V - 1), 102);
    std::vector<int> labels(lab_f.begin(), lab_f.end());
    labels[0] = 0;
    labels[1] = static_cast<int>(V - 1);
    labels[2] = -100;                 // PyTorch's ignore_index
    labels[3] = static_cast<int>(V);  // out of range: ignored too
    labels[static_cast<size_t>(T - 1)] = static_cast<int>(V - 1);
    labels[static_cast<size_t>(T - 2)] = -100;
    std::vector<float> lab_in(labels.begin(), labels.end());
    auto out = run(spec, p, {{"logits", x}, {"labels", lab_in}});
    const CeRef want = ce_reference(x, labels, T, V, cs.scale);
    EXPECT_TRUE(close(out["loss"], want.loss, 1, 1e-4, 10.0)) << "loss";
    EXPECT_TRUE(close(out["dlogits"], want.dlogits, V, 1e-2, 1e-9)) << "dlogits";
    for (const int64_t t : {int64_t{2}, int64_t{3}, T - 2}) {
      EXPECT_EQ(out["loss"][static_cast<size_t>(t)], 0.0f) << "row " << t;
      for (int64_t j = 0; j < V; ++j)
        ASSERT_EQ(out["dlogits"][static_cast<size_t>(t * V + j)], 0.0f)
            << "[" << t << ", " << j << "]";
    }
  }
}

TEST_P(LossOptimTest, CrossEntropyLlamaVocabularyProgramSize) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::CrossEntropySpec s;
  s.tokens = 8192;
  s.vocab = 128256;
  s.scale = 1.0 / 8192;
  const isa::Program p = ops::cross_entropy(spec, s);
  std::printf("[cross_entropy %s] T 8192 V 128256: %zu instructions\n", GetParam().c_str(),
              p.num_instructions());
  // 64 token tiles x 32 column chunks of 4096, two passes: a bounded number of instructions
  // per chunk (host speed is bench/'s business).
  EXPECT_LT(p.num_instructions(), size_t{64} * 32 * 2 * 12);
  EXPECT_EQ(p.spill.tiles, 0);
}

TEST_P(LossOptimTest, CrossEntropyRefusesBadSpecs) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::CrossEntropySpec s;
  s.tokens = 4;
  s.vocab = 0;
  EXPECT_THROW(ops::cross_entropy(spec, s), InputError);
  s.vocab = 8;
  s.scale = std::nan("");
  EXPECT_THROW(ops::cross_entropy(spec, s), InputError);
}

// ---------------------------------------------------------------- adamw

struct AdamRef {
  std::vector<double> master, m, v, m_mag, update;
};

// torch.optim.AdamW's step (decoupled weight decay, bias corrections), in fp64.
AdamRef adam_reference(const ops::AdamWSpec& s, const std::vector<float>& g,
                       const std::vector<float>& master, const std::vector<float>& m,
                       const std::vector<float>& v) {
  AdamRef r;
  const size_t n = g.size();
  r.master.resize(n);
  r.m.resize(n);
  r.v.resize(n);
  r.m_mag.resize(n);
  r.update.resize(n);
  const double bc1 = 1 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1 - std::pow(s.beta2, static_cast<double>(s.step));
  for (size_t i = 0; i < n; ++i) {
    const double gi = g[i];
    r.m[i] = s.beta1 * m[i] + (1 - s.beta1) * gi;
    r.m_mag[i] = std::fabs(s.beta1 * m[i]) + std::fabs((1 - s.beta1) * gi);
    r.v[i] = s.beta2 * v[i] + (1 - s.beta2) * gi * gi;
    const double denom = std::sqrt(r.v[i]) / std::sqrt(bc2) + s.eps;
    r.update[i] = s.lr / bc1 * r.m[i] / denom;
    r.master[i] = master[i] * (1 - s.lr * s.weight_decay) - r.update[i];
  }
  return r;
}

// The bf16 neighbours of x toward zero and away from it.
float bf16_toward_zero(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xFFFF0000u);
}
float bf16_away(float x) {
  return std::bit_cast<float>((std::bit_cast<uint32_t>(x) & 0xFFFF0000u) + 0x10000u);
}

struct AdamInputs {
  std::vector<float> g, master, m, v;
};

AdamInputs adam_inputs(int64_t n) {
  AdamInputs in;
  in.g = values(n, 201, 0.05f);
  in.master = values(n, 202, 1.0f);
  in.m = values(n, 203, 0.01f);
  in.v = values(n, 204, 1.0f);
  for (float& x : in.v) x = x * x * 1e-3f;  // >= 0, some exactly 0
  // Irregular low bits in the master, so its fp32 values are rarely bf16 values.
  for (size_t i = 0; i < in.master.size(); ++i)
    in.master[i] += static_cast<float>((i * 2654435761u) % 1000003) * 1e-9f;
  in.g[5] = 0.0f;  // g = m = v = 0: the update is 0
  in.m[5] = 0.0f;
  in.v[5] = 0.0f;
  return in;
}

std::map<std::string, std::vector<float>> adam_run(const arch::ChipSpec& spec,
                                                   const ops::AdamWSpec& s, const AdamInputs& in,
                                                   bool race_check = false) {
  const isa::Program p = ops::adamw(spec, s);
  if (race_check) expect_race_free(p, spec);
  return run(spec, p, {{"grad", in.g}, {"master", in.master}, {"m", in.m}, {"v", in.v}});
}

::testing::AssertionResult check_adam(const ops::AdamWSpec& s, const AdamInputs& in,
                                      std::map<std::string, std::vector<float>>& out,
                                      bool stochastic) {
  const AdamRef want = adam_reference(s, in.g, in.master, in.m, in.v);
  const size_t n = in.g.size();
  for (const char* name : {"master", "m", "v", "w"})
    if (out[name].size() != n)
      return ::testing::AssertionFailure() << name << ": " << out[name].size() << " elements";
  int64_t up = 0, between = 0;
  for (size_t i = 0; i < n; ++i) {
    const double gm = out["m"][i], gv = out["v"][i], gp = out["master"][i];
    if (!(std::fabs(gm - want.m[i]) <= 1e-6 * want.m_mag[i]))
      return ::testing::AssertionFailure()
             << "m[" << i << "]: got " << gm << ", want " << want.m[i];
    if (!(std::fabs(gv - want.v[i]) <= 1e-6 * want.v[i]))
      return ::testing::AssertionFailure()
             << "v[" << i << "]: got " << gv << ", want " << want.v[i];
    if (!(std::fabs(gp - want.master[i]) <=
          4e-7 * std::fabs(want.master[i]) + 1e-5 * std::fabs(want.update[i])))
      return ::testing::AssertionFailure()
             << "master[" << i << "]: got " << gp << ", want " << want.master[i] << " (update "
             << want.update[i] << ")";
    const float master = out["master"][i], w = out["w"][i];
    if (!stochastic) {
      if (w != round_bf16(master))
        return ::testing::AssertionFailure() << "w[" << i << "] = " << w << ", want "
                                             << round_bf16(master) << " (RNE of " << master << ")";
      continue;
    }
    const float lo = bf16_toward_zero(master), hi = bf16_away(master);
    if (lo == master) {
      if (w != master)
        return ::testing::AssertionFailure()
               << "w[" << i << "] = " << w << ", want the bf16 value " << master;
      continue;
    }
    if (w != lo && w != hi)
      return ::testing::AssertionFailure()
             << "w[" << i << "] = " << w << ", not a bf16 neighbour of " << master;
    ++between;
    up += w == hi;
  }
  // Stochastic rounding rounds some elements away from zero and some toward it (their
  // fractions of an ulp are spread over [0, 1)): both happen in well over 10 % of elements.
  if (stochastic && (up < between / 10 || up > between - between / 10))
    return ::testing::AssertionFailure()
           << up << " of " << between << " rounded away from zero: not stochastic rounding";
  return ::testing::AssertionSuccess();
}

TEST_P(LossOptimTest, AdamW) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t n = 128 * 300 + 77;  // 300 columns and a 77-element tail
  const AdamInputs in = adam_inputs(n);
  for (const int64_t step : {int64_t{1}, int64_t{10}})
    for (const bool sr : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "step " << step << " stochastic " << sr);
      ops::AdamWSpec s;
      s.elements = n;
      s.lr = 1e-3;
      s.weight_decay = 0.1;
      s.step = step;
      s.stochastic_rounding = sr;
      s.seed = 11;
      auto out = adam_run(spec, s, in, step == 1);
      EXPECT_TRUE(check_adam(s, in, out, sr));
    }
}

// A generation without stochastic rounding: the weight is rounded to nearest even even when
// the spec asks for stochastic rounding.
TEST_P(LossOptimTest, AdamWWithoutStochasticRoundingOnChip) {
  arch::ChipSpec spec = chip(GetParam());
  spec.numerics.stochastic_rounding = false;
  const int64_t n = 128 * 40 + 5;
  const AdamInputs in = adam_inputs(n);
  ops::AdamWSpec s;
  s.elements = n;
  s.lr = 1e-3;
  s.weight_decay = 0.1;
  auto out = adam_run(spec, s, in);
  EXPECT_TRUE(check_adam(s, in, out, false));
}

TEST_P(LossOptimTest, AdamWDeterministicPerSeed) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t n = 128 * 64 + 3;
  const AdamInputs in = adam_inputs(n);
  ops::AdamWSpec s;
  s.elements = n;
  s.lr = 1e-3;
  s.weight_decay = 0.1;
  s.seed = 7;
  const auto a = adam_run(spec, s, in);
  const auto b = adam_run(spec, s, in);
  s.seed = 8;
  const auto c = adam_run(spec, s, in);
  EXPECT_EQ(a.at("w"), b.at("w"));
  EXPECT_EQ(a.at("master"), c.at("master"));  // the seed only keys the rounding
  // The timing model, computing values on its own schedule, draws the same bits.
  s.seed = 7;
  const isa::Program p = ops::adamw(spec, s);
  core::CoreRunner timed(spec, p, core::RunMode::kFunctionalTiming);
  for (const auto& [name, vals] :
       {std::pair{"grad", &in.g}, {"master", &in.master}, {"m", &in.m}, {"v", &in.v}})
    timed.functional().write_tensor_f32(name, *vals);
  ASSERT_TRUE(timed.run().ok());
  EXPECT_EQ(timed.functional().read_tensor_f32("w"), a.at("w"));
  size_t differ = 0;
  for (size_t i = 0; i < a.at("w").size(); ++i) differ += a.at("w")[i] != c.at("w")[i];
  EXPECT_GT(differ, 0u);
}

TEST_P(LossOptimTest, AdamWNoWeightDecayAndSmallN) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const int64_t n : {int64_t{77}, int64_t{128}, int64_t{128 * 2049}}) {
    SCOPED_TRACE(n);
    const AdamInputs in = adam_inputs(n);
    ops::AdamWSpec s;
    s.elements = n;
    s.lr = 1e-3;
    s.weight_decay = 0.0;
    s.step = 3;
    auto out = adam_run(spec, s, in, n == 77);
    EXPECT_TRUE(check_adam(s, in, out, true));
  }
}

TEST_P(LossOptimTest, AdamWRefusesBadSpecs) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::AdamWSpec s;
  s.elements = 0;
  EXPECT_THROW(ops::adamw(spec, s), InputError);
  s.elements = 128;
  s.step = 0;
  EXPECT_THROW(ops::adamw(spec, s), InputError);
  s.step = 1;
  s.beta2 = 1.0;
  EXPECT_THROW(ops::adamw(spec, s), InputError);
}

// ---------------------------------------------------------------- timing

// The core's share of the chip's HBM bandwidth (every core streaming), GB/s.
double hbm_share_gbps(const arch::ChipSpec& c) { return c.chip.hbm.bandwidth_gbps / c.chip.cores; }
// fp32 elements per ns of one engine pass over 128 partitions.
double pass_rate(const arch::EngineSpec& e) { return e.clock_ghz * 128; }

// Cross entropy streams the logits twice in and dlogits once out: its DMA bound is that traffic
// over the core's DMA rate for gathered rows (column chunks of a wider matrix), which on
// trn1 is well below its HBM share (printed too). Its engine bound is the kernel's fp32
// passes per element spread evenly over VectorE, ScalarE and GpSimd at their clocks: the max
// (1/2, a 16-bit reduction), the label pick (range_select 1; else a 2-pass multiply and a
// 16-bit sum, 1/2), pass 2's exp (ScalarE 1, or VectorE 1/4 on NC-v4), pass 1's exp (1),
// the subtraction (2) and the one-hot (1, at the fastest clock). The run must take at least
// the larger bound (less 5 % for the model's rounding) and at most 1.5x it.
TEST_P(LossOptimTest, CrossEntropyTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  const arch::CoreSpec& core = spec.core;
  for (const auto& [T, V] :
       std::vector<std::pair<int64_t, int64_t>>{{1024, 32000}, {1024, 128256}}) {
    ops::CrossEntropySpec s;
    s.tokens = T;
    s.vocab = V;
    s.scale = 1.0 / static_cast<double>(T);
    const isa::Program p = ops::cross_entropy(spec, s);
    const core::TimingResult r = core::run_timing(spec, p);
    ASSERT_TRUE(r.ok()) << r.summary();
    const double elems = static_cast<double>(T * V);
    const double bytes = 3 * elems * s.dtype.storage_bytes;
    const double t = static_cast<double>(r.total.v) / 1000;  // ns
    const double hbm = bytes / hbm_share_gbps(spec), dma = bytes / dma_gbps(spec, true);
    const bool fast_exp = core.features.fast_exponential;
    const double vec = 0.5 + (core.features.range_select ? 1.0 : 2.5) + (fast_exp ? 0.25 : 0.0);
    const double fastest =
        std::max({core.vector.clock_ghz, core.scalar.clock_ghz, core.gpsimd.clock_ghz});
    const double engine =
        elems / 128 *
        (vec / core.vector.clock_ghz + (fast_exp ? 1 : 2) / core.scalar.clock_ghz +
         2 / core.gpsimd.clock_ghz + 1 / fastest) /
        3;
    std::printf(
        "[cross_entropy %s] T %lld V %lld: %.1f us; HBM share bound %.1f us (x%.2f), DMA bound "
        "%.1f us (x%.2f), engine bound %.1f us (x%.2f); busy: dve %.0f%% act %.0f%% pool "
        "%.0f%%\n",
        GetParam().c_str(), static_cast<long long>(T), static_cast<long long>(V), t / 1000,
        hbm / 1000, t / hbm, dma / 1000, t / dma, engine / 1000, t / engine,
        r.busy_percent(isa::Engine::kVector), r.busy_percent(isa::Engine::kScalar),
        r.busy_percent(isa::Engine::kGpSimd));
    EXPECT_GE(t, 0.95 * std::max(dma, engine));
    EXPECT_LE(t, 1.5 * std::max(dma, engine));
  }
}

// AdamW reads 16 bytes (grad, master, m, v) and writes 14 (master, m, v, a bf16 w) per element,
// contiguous blocks (the DMA's block rate). Its engine work per element, in fp32 passes:
// ScalarE 5 (three scaled copies, the denominator, the cast), VectorE 4 (two 2-pass ops),
// GpSimd 5 (1 + 2 + 2); the engine bound is the busiest engine's. The run must take at least
// the larger bound (less 5 %) and at most 1.5x it.
TEST_P(LossOptimTest, AdamWTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::AdamWSpec s;
  s.elements = int64_t{128} * 2048 * 16;
  s.weight_decay = 0.1;
  const isa::Program p = ops::adamw(spec, s);
  const core::TimingResult r = core::run_timing(spec, p);
  ASSERT_TRUE(r.ok()) << r.summary();
  const double n = static_cast<double>(s.elements);
  // Read: fp32 grad, m, v, master (16 B); written: m, v, master and the bf16 weight (14 B).
  const double bytes = 30 * n;
  const double t = static_cast<double>(r.total.v) / 1000;
  const double hbm = bytes / hbm_share_gbps(spec),
               dma = 16 * n / dma_gbps(spec, false) + 14 * n / dma_write_gbps(spec, false);
  const double engine =
      std::max({5 * n / pass_rate(spec.core.scalar), 4 * n / pass_rate(spec.core.vector),
                5 * n / pass_rate(spec.core.gpsimd)});
  std::printf(
      "[adamw %s] n %lld: %.1f us; HBM share bound %.1f us (x%.2f), DMA bound %.1f us "
      "(x%.2f), engine bound %.1f us (x%.2f); busy: dve %.0f%% act %.0f%% pool %.0f%%\n",
      GetParam().c_str(), static_cast<long long>(s.elements), t / 1000, hbm / 1000, t / hbm,
      dma / 1000, t / dma, engine / 1000, t / engine, r.busy_percent(isa::Engine::kVector),
      r.busy_percent(isa::Engine::kScalar), r.busy_percent(isa::Engine::kGpSimd));
  EXPECT_GE(t, 0.95 * std::max(dma, engine));
  EXPECT_LE(t, 1.5 * std::max(dma, engine));
}

INSTANTIATE_TEST_SUITE_P(Generations, LossOptimTest, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
