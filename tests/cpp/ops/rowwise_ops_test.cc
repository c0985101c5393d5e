// The row-wise kernels: norm, embedding, elementwise and the MoE router (tolerances:
// ops_test_util.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "base/error.h"
#include "ops/ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class RowOpsTest : public OpsTest {};

// ---------------------------------------------------------------- norm

TEST_P(RowOpsTest, NormOp) {
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

TEST_P(RowOpsTest, NormRefusesNone) {
  ops::NormSpec s;
  s.tokens = 130;
  s.features = 700;
  s.norm = Norm::kNone;
  EXPECT_THROW(ops::norm(chip(GetParam()), s), InputError);
}

// ---------------------------------------------------------------- embedding

TEST_P(RowOpsTest, Embedding) {
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
TEST_P(RowOpsTest, Elementwise) {
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
TEST_P(RowOpsTest, Router) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t T = 150;
  for (const bool normalize : {true, false})
    for (const auto& [E, k] : std::vector<std::pair<int64_t, int64_t>>{{8, 2}, {5, 4}, {64, 8}}) {
      SCOPED_TRACE(::testing::Message()
                   << E << " experts, top " << k << (normalize ? "" : ", full softmax"));
      ops::RouterSpec s;
      s.tokens = T;
      s.experts = E;
      s.top_k = k;
      s.normalize = normalize;
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
        // Qwen3-MoE without norm_topk_prob divides by every expert's exp, Mixtral by the top k's.
        double sum = 0;
        for (int64_t j = 0; j < (normalize ? k : E); ++j)
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

INSTANTIATE_TEST_SUITE_P(Generations, RowOpsTest, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
