// The attention kernel against fp64 references: causal or not, GQA, RoPE and q/k norm, a KV
// cache, the lse saved for training (tolerances: ops_test_util.h, and at the lse test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "ops/ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class AttentionTest : public OpsTest {};

// ---------------------------------------------------------------- attention

struct AttnCase {
  bool causal, rope, qk_norm;
};

TEST_P(AttentionTest, Attention) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t B = 2, S = 200, Hq = 4, Hkv = 2, d = 64, group = Hq / Hkv;
  const double theta = 10000.0;
  for (const AttnCase c :
       {AttnCase{true, false, false}, AttnCase{false, false, false}, AttnCase{true, true, true},
        AttnCase{false, true, true}, AttnCase{true, true, false}, AttnCase{true, false, true}}) {
    SCOPED_TRACE(::testing::Message()
                 << "causal " << c.causal << " rope " << c.rope << " qk_norm " << c.qk_norm);
    ops::AttentionSpec s = attention_shape(B, S, Hq, Hkv, d);
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
// L = 700 has whole cached tiles in two chunks beside a partial one; one new token stacks
// the group's q heads as rows.
class AttentionCacheTest : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {};

TEST_P(AttentionCacheTest, AttentionWithKvCache) {
  const arch::ChipSpec& spec = chip(std::get<0>(GetParam()));
  const int64_t B = 2, L = std::get<1>(GetParam()), Hq = 4, Hkv = 2, d = 64;
  ops::AttentionSpec full = attention_shape(B, L, Hq, Hkv, d);
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

TEST_P(AttentionTest, AttentionRefusesUnevenGroups) {
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

// save_lse (training): lse [B*S, Hq] fp32 holds each query row's log-sum-exp of its scaled,
// masked scores, against max + log(sum of exp) in fp64; out is bit for bit the same as
// without it. Tolerance: the kernel's scores are exact bf16 products summed in fp32 and its
// sums of exp fp32, a few fp32 roundings of values of order 1-10 (measured: within 2e-7 of
// max(|lse|, 1)); 1e-5 leaves room for longer sums, and fails any real mistake (the scale,
// the mask, ln(l) without the max: >= 1e-2).
TEST_P(AttentionTest, AttentionSavesLse) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t B = 2, S = 200, Hq = 4, Hkv = 2, d = 64, group = Hq / Hkv;
  Inputs in;
  in["q"] = values(B * S * Hq * d, 91, 2.0f);
  in["k"] = values(B * S * Hkv * d, 92, 2.0f);
  in["v"] = values(B * S * Hkv * d, 93, 1.0f);
  for (const bool causal : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "causal " << causal);
    ops::AttentionSpec s = attention_shape(B, S, Hq, Hkv, d);
    s.causal = causal;
    const auto plain = run(spec, ops::attention(spec, s), in);
    s.save_lse = true;
    const isa::Program p = ops::attention(spec, s);
    expect_race_free(p, spec);
    const auto got = run(spec, p, in);
    EXPECT_TRUE(equal(got.at("out"), plain.at("out"), Hq * d));
    std::vector<double> want(static_cast<size_t>(B * S * Hq));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hq; ++h)
        for (int64_t i = 0; i < S; ++i) {
          const float* qi = &in.at("q")[((b * S + i) * Hq + h) * d];
          std::vector<double> sc;
          for (int64_t j = 0; j < (causal ? i + 1 : S); ++j) {
            const float* kj = &in.at("k")[((b * S + j) * Hkv + h / group) * d];
            double dot = 0;
            for (int64_t e = 0; e < d; ++e) dot += double{qi[e]} * kj[e];
            sc.push_back(dot * scale);
          }
          const double mx = *std::max_element(sc.begin(), sc.end());
          double sum = 0;
          for (const double x : sc) sum += std::exp(x - mx);
          want[(b * S + i) * Hq + h] = mx + std::log(sum);
        }
    EXPECT_TRUE(close(got.at("lse"), want, Hq, 1e-5, 1.0));
  }
  ops::AttentionSpec cache;
  cache.seq = 1;
  cache.q_heads = Hq;
  cache.kv_heads = Hkv;
  cache.head_dim = d;
  cache.kv_cache = true;
  cache.kv_seq = 64;
  EXPECT_NO_THROW(ops::attention(spec, cache));
  cache.save_lse = true;
  EXPECT_THROW(ops::attention(spec, cache), InputError);
}

// A decode step (one token, a long cache) is a few DMAs per sequence and kv head, not two per
// 128 cached positions: from NC-v3 on each trigger costs its engine ~600 ns, and at batch 32
// the per-position DMAs made attention 87 % of a Llama-3.1-8B decode step (issue 20).
TEST_P(AttentionTest, DecodeStepLoadsTheCacheInFewDmas) {
  const arch::ChipSpec& spec = chip(GetParam());
  // 11 whole tiles of cached positions and a partial one
  const ops::AttentionSpec s = decode_attention(3, 1501, true);
  const isa::Program p = ops::attention(spec, s);
  int64_t dmas = 0;
  for (const isa::Engine e : isa::kAllEngines)
    for (const isa::Instruction& in : p.stream(e))
      if (in.op == isa::Opcode::kDmaCopy || in.op == isa::Opcode::kDmaTranspose) ++dmas;
  // Per sequence and kv head: k and v of 3 chunks and of the partial tile (8), the new key and
  // value loaded and stored (4), the stacked q heads in and out (2); the angles once.
  EXPECT_LE(dmas, 2 + s.batch * s.kv_heads * 14);
  expect_race_free(p, spec);
}

INSTANTIATE_TEST_SUITE_P(Generations, AttentionTest, ::testing::ValuesIn(kGenerations));
INSTANTIATE_TEST_SUITE_P(Generations, AttentionCacheTest,
                         ::testing::Combine(::testing::ValuesIn(kGenerations),
                                            ::testing::Values(int64_t{200}, int64_t{700})));

}  // namespace
}  // namespace trnsim::kernel_test
