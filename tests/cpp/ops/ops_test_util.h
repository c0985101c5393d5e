// Helpers of the op library's tests (linear_test.cc, attention_test.cc, rowwise_ops_test.cc):
// exact bf16 inputs, fp64 reference pieces, tolerant and exact comparisons, the race check.
//
// The op library (src/ops) is tested on trn1, trn2 and trn3: every op run through the functional
// runner against fp64 references computed here (never with trnsim's numerics), on shapes with
// partial tiles (tokens, K, PSUM banks, sequence), and every program checked race-free.
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
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/race/race_check.h"
#include "kernel/kernel_test_util.h"
#include "ops/ops.h"

namespace trnsim::kernel_test {

using ops::Act;
using ops::Norm;
using Inputs = std::map<std::string, std::vector<float>>;

class OpsTest : public ::testing::TestWithParam<std::string> {};

// ---------------------------------------------------------------- timing bounds

// The core's DMA rate, GB/s = bytes per ns, for HBM blocks (`gathered`: rows gathered with
// gaps, as indirect DMAs count): 16 engines at their practical rate, the HBM stack's bandwidth
// (one core running has its stack to itself), the core's cap for the kind (docs/timing.md
// "DMA"). Descriptor time only slows transfers further, so bounds from it stay lower bounds.
inline double dma_gbps(const arch::ChipSpec& c, bool gathered = false) {
  const double engines = c.core.dma.engines * c.core.dma.engine_bandwidth_practical_gbps;
  const double stack = c.chip.hbm.bandwidth_gbps / c.chip.hbm.stacks.value_or(c.chip.cores);
  const std::optional<double> cap = gathered
                                        ? c.core.dma.core_bandwidth_gbps
                                        : c.core.dma.core_block_bandwidth_gbps.value_or(
                                              c.core.dma.core_bandwidth_gbps.value_or(engines));
  return std::min({engines, stack, cap.value_or(engines)});
}

// The same for transfers that write HBM: the core's write cap where the spec sets one.
inline double dma_write_gbps(const arch::ChipSpec& c, bool gathered = false) {
  return std::min(dma_gbps(c, gathered),
                  c.core.dma.core_write_bandwidth_gbps.value_or(dma_gbps(c, gathered)));
}

// ---------------------------------------------------------------- helpers

// An attention's shape: batch x seq tokens, q heads over kv heads of head_dim; the rest
// (causal, no RoPE, no cache) as ops::AttentionSpec defaults it.
inline ops::AttentionSpec attention_shape(int64_t batch, int64_t seq, int64_t q_heads,
                                          int64_t kv_heads, int64_t head_dim) {
  ops::AttentionSpec s;
  s.batch = batch;
  s.seq = seq;
  s.q_heads = q_heads;
  s.kv_heads = kv_heads;
  s.head_dim = head_dim;
  return s;
}

// A decode step's attention: one token per sequence, 8 q heads over 2 kv heads of 128 (four q
// heads stacked per kv head) attending to `kv_seq` positions through a KV cache.
inline ops::AttentionSpec decode_attention(int64_t batch, int64_t kv_seq, bool rope) {
  ops::AttentionSpec s = attention_shape(batch, 1, 8, 2, 128);
  s.rope = rope;
  s.kv_cache = true;
  s.kv_seq = kv_seq;
  return s;
}

// Multiples of 1/64 in [-1, 1] times `scale` (a power of two keeps them exact in bf16), plus
// `offset`.
inline std::vector<float> values(int64_t n, uint64_t seed, float scale, float offset = 0.0f) {
  std::vector<float> v = sixty_fourths(static_cast<size_t>(n), seed);
  for (float& x : v) x = x * scale + offset;
  return v;
}

inline double bf(double x) { return round_bf16(static_cast<float>(x)); }

// Hugging Face Llama's RoPE tables for positions 0..S-1: inv_freq = theta^(-2i/d),
// cos(cat(angles, angles)) and sin likewise, [S, d] each, as in["cos"] and in["sin"].
inline void add_rope_tables(std::map<std::string, std::vector<float>>& in, int64_t S, int64_t d,
                            double theta = 10000.0) {
  std::vector<float> cs(static_cast<size_t>(S * d)), sn(cs.size());
  for (int64_t pos = 0; pos < S; ++pos)
    for (int64_t i = 0; i < d / 2; ++i) {
      const double ang = static_cast<double>(pos) * std::pow(theta, -2.0 * i / d);
      for (const int64_t j : {i, i + d / 2}) {
        cs[pos * d + j] = static_cast<float>(std::cos(ang));
        sn[pos * d + j] = static_cast<float>(std::sin(ang));
      }
    }
  in["cos"] = cs;
  in["sin"] = sn;
}

inline void expect_race_free(const isa::Program& p, const arch::ChipSpec& spec) {
  const core::RaceReport races = core::check_races(p, spec, {200000});
  EXPECT_TRUE(races.clean()) << core::format_race_report(races);
}

// Every element within rel * max(|want|, |mag|, floor) (mag: a magnitude the rounding error
// scales with other than the result's, when given); the message names the first mismatch as
// [row, col] of a `cols`-wide tensor, and the largest relative error.
inline ::testing::AssertionResult close(const std::vector<float>& got,
                                        const std::vector<double>& want, int64_t cols, double rel,
                                        double floor, const std::vector<double>* mag = nullptr) {
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

inline ::testing::AssertionResult equal(const std::vector<float>& got,
                                        const std::vector<float>& want, int64_t cols) {
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
inline std::vector<double> norm_row(Norm n, double eps, const float* x, int64_t f,
                                    const std::vector<float>& gamma,
                                    const std::vector<float>* beta) {
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

inline double act_ref(Act a, double v) {
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

}  // namespace trnsim::kernel_test
