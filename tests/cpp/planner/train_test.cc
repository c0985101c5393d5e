// planner::train: a step is the pipeline's compute and bubble, the stage sends, the
// data-parallel reduction and the optimizer, each moving the way its mechanism says; the plan
// is checked against the system; memory shrinks with ZeRO-1 and full recomputation.
#include "planner/train.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "graph/model_config.h"

namespace trnsim::planner {
namespace {

const graph::ModelConfig& model() {
  static const graph::ModelConfig m = graph::load_model_config("tiny-llama");
  return m;
}

// tiny-llama (2 layers, 4 heads, 2 kv heads) on one trn1.32xlarge: 32 cores.
TrainOptions plan(int tp, int pp, int dp) {
  TrainOptions o;
  o.system = "trn1.32xlarge";
  o.tp = tp;
  o.pp = pp;
  o.dp = dp;
  o.seq = 256;
  o.global_batch = 64;
  o.micro_batch = 1;
  o.search_tilings = false;
  return o;
}

std::string error_of(const TrainOptions& o) {
  try {
    train(model(), o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Train, StepIsTheSumOfItsParts) {
  const TrainResult r = train(model(), plan(2, 2, 8));
  EXPECT_EQ(r.micro_batches, 64 / 8);
  ASSERT_EQ(r.stages.size(), 2u);
  double sum = 0, slowest = 0;
  for (const auto& s : r.stages) {
    EXPECT_GT(s.forward_s, 0);
    EXPECT_GT(s.backward_s, s.forward_s);  // two matmuls per forward one
    sum += s.forward_s + s.backward_s;
    slowest = std::max(slowest, s.forward_s + s.backward_s);
  }
  EXPECT_NEAR(r.compute_s, 8 * slowest, 1e-12);
  EXPECT_NEAR(r.pp_bubble_s, sum - slowest, 1e-12);  // (pp - 1) stages' worth, 1F1B
  EXPECT_GT(r.pp_comm_s, 0);
  EXPECT_GT(r.dp_comm_s, 0);
  EXPECT_GT(r.optimizer_s, 0);
  EXPECT_NEAR(r.step_time_s,
              r.compute_s + r.pp_bubble_s + r.pp_comm_s + r.dp_comm_s + r.optimizer_s, 1e-12);
  EXPECT_NEAR(r.sequences_per_s, 64 / r.step_time_s, 1e-9);
  EXPECT_NEAR(r.tokens_per_s, r.sequences_per_s * 256, 1e-6);
  EXPECT_GT(r.mfu, 0);
  EXPECT_LT(r.mfu, 1);
  // The embedding is the first stage's, the head and loss the last's.
  EXPECT_GT(r.stages[1].forward_s, r.stages[0].forward_s);
}

TEST(Train, NoPipelineNoBubbleNoReplicasNoReduction) {
  TrainOptions o = plan(2, 1, 16);
  const TrainResult r = train(model(), o);
  EXPECT_EQ(r.pp_bubble_s, 0);
  EXPECT_EQ(r.pp_comm_s, 0);
  EXPECT_GT(r.dp_comm_s, 0);
  // More micro-batches per replica: the compute grows in proportion, the reduction does not.
  o.global_batch = 128;
  const TrainResult r2 = train(model(), o);
  EXPECT_NEAR(r2.compute_s, 2 * r.compute_s, 1e-9);
  EXPECT_NEAR(r2.dp_comm_s, r.dp_comm_s, 1e-12);
}

TEST(Train, ZeroOneShardsTheOptimizer) {
  TrainOptions o = plan(2, 2, 8);
  o.zero = 0;
  const TrainResult z0 = train(model(), o);
  o.zero = 1;
  const TrainResult z1 = train(model(), o);
  EXPECT_EQ(z1.stages[0].optimizer_bytes * 8, z0.stages[0].optimizer_bytes);
  EXPECT_LT(z1.memory_per_chip_bytes, z0.memory_per_chip_bytes);
  EXPECT_NEAR(z1.optimizer_s * 8, z0.optimizer_s, 1e-12);
  // fp32 gradients of bf16 weights (the norm scales are fp32 already).
  EXPECT_NEAR(static_cast<double>(z1.stages[0].grad_bytes),
              2.0 * static_cast<double>(z1.stages[0].weight_bytes),
              0.01 * static_cast<double>(z1.stages[0].grad_bytes));
}

// ZeRO-2 shards the gradients too, ZeRO-3 the weights too (plus two layers gathered whole);
// their collectives run every micro-batch behind the compute, so what they expose is bounded
// by closed forms of the same phases.
TEST(Train, ZeroTwoAndThreeShardGradientsAndWeights) {
  TrainOptions o = plan(2, 1, 16);  // both layers on one stage: ZeRO-3 gathers one at a time
  o.zero = 1;
  const TrainResult z1 = train(model(), o);
  o.zero = 2;
  const TrainResult z2 = train(model(), o);
  o.zero = 3;
  const TrainResult z3 = train(model(), o);
  for (size_t s = 0; s < 1; ++s) {
    EXPECT_EQ(z2.stages[s].optimizer_bytes, z1.stages[s].optimizer_bytes);
    EXPECT_EQ(z2.stages[s].grad_bytes, z1.stages[s].grad_bytes / 16);
    EXPECT_EQ(z2.stages[s].weight_bytes, z1.stages[s].weight_bytes);
    EXPECT_EQ(z3.stages[s].grad_bytes, z2.stages[s].grad_bytes);
    EXPECT_LT(z3.stages[s].weight_bytes, z1.stages[s].weight_bytes);
    EXPECT_GE(z3.stages[s].weight_bytes, z1.stages[s].weight_bytes / 16);
    EXPECT_EQ(z3.stages[s].params, z1.stages[s].params);  // the collectives move them whole
  }
  EXPECT_LT(z2.memory_per_chip_bytes, z1.memory_per_chip_bytes);
  EXPECT_LT(z3.memory_per_chip_bytes, z2.memory_per_chip_bytes);
  // The compute and the optimizer's share do not change; only the exposed DP traffic does.
  EXPECT_EQ(z2.compute_s, z1.compute_s);
  EXPECT_EQ(z3.optimizer_s, z1.optimizer_s);
  EXPECT_GE(z2.dp_comm_s, 0);
  EXPECT_GE(z3.dp_comm_s, 0);
  // ZeRO-2's gather of the weights is ZeRO-1's; its reduce-scatters hide behind backward at
  // most: it exposes no more than m of them on top.
  EXPECT_LE(z2.dp_comm_s, z1.dp_comm_s * static_cast<double>(z1.micro_batches) + 1e-12);
}

// The interleaved schedule: v chunks per stage divide the bubble by v, cross pp v - 1
// boundaries instead of pp - 1, and keep 1 + (pp - 1) / (pp v) times the activations in
// flight; the compute is the same.
TEST(Train, InterleavingDividesTheBubbleAndCostsSendsAndMemory) {
  graph::ModelConfig m = model();
  m.layers = 8;  // tiny-llama's layers, four times
  TrainOptions o = plan(2, 2, 8);
  const TrainResult one = train(m, o);
  o.virtual_stages = 2;
  const TrainResult two = train(m, o);
  EXPECT_EQ(two.virtual_stages, 2);
  EXPECT_EQ(two.compute_s, one.compute_s);
  EXPECT_NEAR(two.pp_bubble_s, one.pp_bubble_s / 2, 1e-15);
  EXPECT_NEAR(two.pp_comm_s, one.pp_comm_s * (2 * 2 - 1) / (2 - 1), 1e-12);
  EXPECT_GT(two.memory_per_chip_bytes, one.memory_per_chip_bytes);
  EXPECT_EQ(train_memory(m, o).memory_per_chip_bytes, two.memory_per_chip_bytes);
  o.virtual_stages = 3;  // 2 stages x 3 chunks do not divide 8 layers
  EXPECT_THROW(train(m, o), InputError);
  o = plan(2, 1, 16);
  o.virtual_stages = 2;  // nothing to interleave on one stage
  EXPECT_THROW(train(m, o), InputError);
  o = plan(2, 2, 8);
  o.global_batch = 8 * 3;  // 3 micro-batches per replica are not whole rounds of 2 stages
  o.virtual_stages = 2;
  EXPECT_THROW(train(m, o), InputError);
}

// A rank of two physical cores (trn2, LNC=2) without tensor parallelism still splits its
// kernels over its cores, whose partial sums are all-reduced among them (this threw an
// internal error before).
TEST(Train, OneRankOfTwoCoresReducesAmongItsCores) {
  TrainOptions o = plan(1, 1, 64);
  o.system = "trn2.48xlarge";  // 16 chips x 8 cores / LNC 2
  const TrainResult r = train(model(), o);
  EXPECT_EQ(r.lnc, 2);
  EXPECT_GT(r.tp_comm_s, 0);
  EXPECT_GT(r.step_time_s, r.tp_comm_s);
}

// --set takes system keys too, beside chip keys: a slower collective step (system) slows the
// TP all-reduces inside the stage runs and the DP reduction across servers, a slower TensorE
// (chip) the compute. (tiny-llama's collectives are latency-bound: bandwidth what-ifs barely
// move them.)
TEST(Train, SystemAndChipWhatIfsTogether) {
  TrainOptions o = plan(4, 1, 16);
  o.servers = 2;
  o.dp = 16;  // 64 cores of two servers: TP 4 (two chips) x DP 16
  const TrainResult base = train(model(), o);
  o.overrides = {arch::parse_override("collective.step_latency_ns=15000"),
                 arch::parse_override("core.tensor.clock_ghz=x0.5")};
  const TrainResult slow = train(model(), o);
  EXPECT_GT(slow.tp_comm_s, base.tp_comm_s);
  EXPECT_GT(slow.dp_comm_s, base.dp_comm_s);
  EXPECT_GT(slow.compute_s - slow.tp_comm_s, base.compute_s - base.tp_comm_s);
  TrainOptions bad = plan(2, 2, 8);
  bad.overrides = {arch::parse_override("server.no_such_key=1")};
  EXPECT_THROW(train(model(), bad), InputError);
}

TEST(Train, FullRecomputationTradesTimeForMemory) {
  TrainOptions o = plan(2, 1, 16);  // both layers on one stage: recomputation keeps their inputs
  const TrainResult keep = train(model(), o);
  o.recompute = Recompute::kFull;
  const TrainResult redo = train(model(), o);
  EXPECT_GT(redo.stages[0].backward_s, keep.stages[0].backward_s);
  EXPECT_LT(redo.stages[0].activation_bytes, keep.stages[0].activation_bytes);
  EXPECT_GT(redo.hfu, redo.mfu);
  EXPECT_GT(redo.step_time_s, keep.step_time_s);
}

// Selective recomputation runs each layer's attention forward once more in the backward:
// the backward grows by exactly the attention kernels' forward time (no more, no less than
// full recomputation's share of it), HFU counts the attention FLOPs again, and flash
// attention's saved row statistics are dropped.
TEST(Train, SelectiveRecomputationRunsTheAttentionForwardAgain) {
  TrainOptions o = plan(2, 1, 16);
  const TrainResult keep = train(model(), o);
  o.recompute = Recompute::kSelective;
  const TrainResult sel = train(model(), o);
  o.recompute = Recompute::kFull;
  const TrainResult full = train(model(), o);
  EXPECT_EQ(sel.stages[0].forward_s, keep.stages[0].forward_s);
  const double extra = sel.stages[0].backward_s - keep.stages[0].backward_s;
  EXPECT_GT(extra, 0);
  EXPECT_LT(extra, full.stages[0].backward_s - keep.stages[0].backward_s);
  EXPECT_GT(sel.hfu, sel.mfu);
  EXPECT_LT(sel.hfu - sel.mfu, full.hfu - full.mfu);
  EXPECT_LT(sel.stages[0].activation_bytes, keep.stages[0].activation_bytes);
  EXPECT_GT(sel.stages[0].activation_bytes, full.stages[0].activation_bytes);
  EXPECT_EQ(sel.to_json()["recompute"], "selective");
  EXPECT_THROW(parse_recompute("partial", "train", "--recompute"), InputError);
  EXPECT_EQ(parse_recompute("selective", "train", "--recompute"), Recompute::kSelective);
}

// Eager attention keeps each layer's [S, S] probabilities of its heads for the backward
// (bf16: tp 2 gives each rank 2 of the 4 heads), which selective recomputation drops
// (Megatron's reason for it), and its kernels move those tensors through HBM: slower.
TEST(Train, EagerAttentionSavesTheProbabilities) {
  TrainOptions o = plan(2, 1, 16);
  const TrainResult flash = train(model(), o);
  o.eager_attention = true;
  const TrainResult eager = train(model(), o);
  const int64_t probs = 2 * int64_t{2} * 256 * 256 * 2;  // layers x heads x S x S x bytes
  const int64_t lse = 2 * int64_t{256} * 2 * 4;          // layers x tokens x heads x fp32
  EXPECT_EQ(eager.stages[0].activation_bytes - flash.stages[0].activation_bytes, probs - lse);
  EXPECT_GT(eager.stages[0].forward_s, flash.stages[0].forward_s);
  EXPECT_GT(eager.stages[0].backward_s, flash.stages[0].backward_s);
  EXPECT_EQ(eager.to_json()["attention"], "eager");
  EXPECT_EQ(flash.to_json()["attention"], "flash");
  o.recompute = Recompute::kSelective;
  const TrainResult sel = train(model(), o);
  o.eager_attention = false;
  const TrainResult flash_sel = train(model(), o);
  EXPECT_EQ(sel.stages[0].activation_bytes, flash_sel.stages[0].activation_bytes);
}

// Sequence parallelism: the norms run on a rank's shard of the tokens (less compute), the
// TP communication is reduce-scatters and all-gathers, and the activations the norms and
// residual adds keep shrink by tp.
TEST(Train, SequenceParallelismShardsNormsAndTheirActivations) {
  TrainOptions o = plan(4, 1, 8);
  const TrainResult tp = train(model(), o);
  o.sequence_parallel = true;
  const TrainResult sp = train(model(), o);
  EXPECT_LT(sp.stages[0].activation_bytes, tp.stages[0].activation_bytes);
  EXPECT_GT(sp.tp_comm_s, 0);
  EXPECT_EQ(sp.to_json()["sequence_parallel"], true);
  EXPECT_EQ(tp.to_json()["sequence_parallel"], false);
  EXPECT_NE(sp.text().find("sequence parallel"), std::string::npos);
  // With one rank there is nothing to split.
  o.tp = 1;
  o.dp = 32;
  EXPECT_EQ(train(model(), o).to_json()["sequence_parallel"], false);
}

TEST(Train, PlansThatDoNotMatchAreRefused) {
  EXPECT_NE(error_of(plan(2, 2, 4)).find("= 16 ranks"), std::string::npos);
  EXPECT_NE(error_of(plan(1, 4, 8)).find("do not divide"), std::string::npos);  // 2 layers
  TrainOptions o = plan(2, 2, 8);
  o.global_batch = 12;
  EXPECT_NE(error_of(o).find("micro-batches"), std::string::npos);
  o = plan(2, 2, 8);
  o.zero = 4;
  EXPECT_NE(error_of(o).find("ZeRO"), std::string::npos);
  o = plan(2, 2, 8);
  o.system = "";
  EXPECT_NE(error_of(o).find("system"), std::string::npos);
  o = plan(2, 2, 8);
  o.ep = 2;  // a dense model has no experts to split
  EXPECT_NE(error_of(o).find("expert-parallel"), std::string::npos);
}

// A MoE model trains (its blocks' backward: graph/backward.cc), and expert parallelism inside
// the TP group gives each rank whole experts: the same weights per rank, fewer and wider
// expert kernels, fewer routed rows kept for the backward.
TEST(Train, MixtureOfExpertsWithExpertParallelism) {
  const graph::ModelConfig m = graph::load_model_config("tiny-qwen3-moe");
  TrainOptions o = plan(4, 1, 8);
  const TrainResult split = train(m, o);
  o.ep = 4;
  const TrainResult ep = train(m, o);
  EXPECT_EQ(ep.ep, 4);
  for (const TrainResult* r : {&split, &ep}) {
    EXPECT_GT(r->stages[0].backward_s, r->stages[0].forward_s);
    EXPECT_GT(r->mfu, 0);
    EXPECT_LT(r->mfu, 1);
  }
  EXPECT_EQ(ep.stages[0].params, split.stages[0].params);
  EXPECT_LT(ep.stages[0].activation_bytes, split.stages[0].activation_bytes);
  o.ep = 3;  // 8 experts
  TrainOptions bad = o;
  try {
    train(m, bad);
    ADD_FAILURE() << "ep 3 of 8 experts accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expert-parallel"), std::string::npos) << e.what();
  }
}

// Experts across replicas (ep = tp x e): every core holds whole experts, fewer of them; the
// routed rows cross replicas by all-to-alls (inside the compute, counted on their own), and
// the experts' gradients are reduced among the dp / e replicas that hold the same experts.
TEST(Train, ExpertParallelismAcrossReplicas) {
  const graph::ModelConfig m = graph::load_model_config("tiny-qwen3-moe");  // 8 experts
  TrainOptions o = plan(2, 1, 16);
  o.global_batch = 32;
  o.ep = 2;  // inside TP: 4 experts per core
  const TrainResult inside = train(m, o);
  o.ep = 4;  // 2 replicas: 2 experts per core
  const TrainResult across = train(m, o);
  o.ep = 8;  // 4 replicas: 1 expert per core
  const TrainResult wide = train(m, o);
  EXPECT_EQ(inside.expert_dp, 1);
  EXPECT_EQ(inside.ep_comm_s, 0);
  EXPECT_EQ(across.expert_dp, 2);
  EXPECT_EQ(wide.expert_dp, 4);
  for (const TrainResult* r : {&across, &wide}) {
    EXPECT_GT(r->ep_comm_s, 0);
    EXPECT_LT(r->ep_comm_s, r->compute_s);
    EXPECT_GT(r->stages[0].expert_params, 0);
  }
  // Half and a quarter of the experts' weights per core; the rest the same.
  const auto& a = inside.stages[0];
  const auto& b = across.stages[0];
  const auto& c = wide.stages[0];
  EXPECT_EQ(b.params - b.expert_params, a.params - a.expert_params);
  EXPECT_EQ(2 * b.expert_params, a.expert_params);
  EXPECT_EQ(4 * c.expert_params, a.expert_params);
  EXPECT_LT(c.weight_bytes, b.weight_bytes);
  EXPECT_LT(b.weight_bytes, a.weight_bytes);
  // The experts' gradients move among fewer replicas.
  EXPECT_LT(wide.dp_comm_s, inside.dp_comm_s);
  // ep must be TP x a divisor of DP, and split the experts over every core.
  o.ep = 6;
  EXPECT_NE(error_of(o).find("expert-parallel"), std::string::npos);
  try {
    o.ep = 16;  // 8 replicas of 2 cores: 16 cores for 8 experts
    train(m, o);
    ADD_FAILURE() << "ep 16 of 8 experts accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expert-parallel"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trnsim::planner
