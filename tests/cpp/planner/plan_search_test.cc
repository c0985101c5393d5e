// planner::search_plans: every legal plan is built (a closed-form count), the ones that do not
// fit are pruned before timing, the rest ranked by step time with the figures train() gives
// for the same plan on its own (shared kernel caches change no number), the same on one
// thread or two; illegal plans are counted with their reasons.
#include "planner/plan_search.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/error.h"
#include "graph/model_config.h"

namespace trnsim::planner {
namespace {

const graph::ModelConfig& model() {
  static const graph::ModelConfig m = graph::load_model_config("tiny-llama");
  return m;
}

// tiny-llama (2 layers, 4 heads) on one trn1.32xlarge: 32 ranks of one core.
PlanSearchOptions options() {
  PlanSearchOptions o;
  o.base.system = "trn1.32xlarge";
  o.base.seq = 256;
  o.base.global_batch = 64;
  o.base.search_tilings = false;
  o.micro_batch = {1, 2};
  o.top = 1000;
  return o;
}

TEST(PlanSearch, BuildsEveryLegalPlanAndRanksTheTimedOnesByStepTime) {
  const PlanSearchResult r = search_plans(model(), options());
  // TP 1, 2, 4 (a power of two dividing 4 heads) x PP 1, 2 (dividing 2 layers): every product
  // divides 32 ranks, DP >= 4; x 2 micro-batches x ZeRO 0, 1 x recompute none, selective,
  // full.
  EXPECT_EQ(r.enumerated, 3u * 2 * 2 * 2 * 3);
  EXPECT_EQ(r.ranks, 32);
  EXPECT_EQ(r.illegal, 0u);
  EXPECT_EQ(r.pruned_memory, 0u);  // a tiny model fits every plan
  EXPECT_EQ(r.timed, r.enumerated);
  ASSERT_EQ(r.best.size(), r.timed);
  EXPECT_GT(r.kernels_simulated, 0);
  for (size_t i = 0; i < r.best.size(); ++i) {
    const PlanOutcome& p = r.best[i];
    EXPECT_TRUE(p.timed);
    EXPECT_EQ(int64_t{p.result.tp} * p.result.pp * p.result.dp, 32);
    EXPECT_GT(p.result.step_time_s, 0);
    if (i > 0) EXPECT_LE(r.best[i - 1].result.step_time_s, p.result.step_time_s);
    EXPECT_EQ(p.bound, plan_bound(p.result));
  }
}

TEST(PlanSearch, APlansFiguresAreThoseOfTrainingItAlone) {
  PlanSearchOptions o = options();
  o.top = 3;
  const PlanSearchResult r = search_plans(model(), o);
  ASSERT_EQ(r.best.size(), 3u);
  for (const PlanOutcome& p : r.best) {
    const TrainResult alone = train(model(), p.plan);
    EXPECT_EQ(alone.step_time_s, p.result.step_time_s);
    EXPECT_EQ(alone.memory_per_chip_bytes, p.result.memory_per_chip_bytes);
    EXPECT_EQ(alone.dp_comm_s, p.result.dp_comm_s);
  }
}

TEST(PlanSearch, ThreadsChangeNothing) {
  PlanSearchOptions o = options();
  o.recompute = {Recompute::kNone};
  o.zero = {1};
  const PlanSearchResult one = search_plans(model(), o);
  o.jobs = 2;
  const PlanSearchResult two = search_plans(model(), o);
  EXPECT_EQ(one.to_json().dump(), two.to_json().dump());
}

TEST(PlanSearch, PrunesByMemoryBeforeTimingAndNamesTheClosestPlan) {
  PlanSearchOptions o = options();
  o.recompute = {Recompute::kNone};
  o.zero = {0};
  o.micro_batch = {1};
  // 2 MiB of HBM per chip: no plan fits; none is timed.
  o.base.overrides = {arch::parse_override("chip.hbm.capacity_gib=0.001953125")};
  const PlanSearchResult r = search_plans(model(), o);
  EXPECT_EQ(r.enumerated, 6u);
  EXPECT_EQ(r.pruned_memory, 6u);
  EXPECT_EQ(r.timed, 0u);
  EXPECT_EQ(r.kernels_simulated, 0);
  ASSERT_TRUE(r.least_memory.has_value());
  EXPECT_FALSE(r.least_memory->result.fits());
  EXPECT_NE(r.text().find("no plan fits: the closest"), std::string::npos) << r.text();
  // The closest needs least: no other plan of the search needs less.
  for (int tp : {1, 2, 4})
    for (int pp : {1, 2}) {
      TrainOptions t = o.base;
      t.tp = tp, t.pp = pp, t.dp = 32 / (tp * pp), t.zero = 0;
      EXPECT_GE(train_memory(model(), t).memory_per_chip_bytes,
                r.least_memory->result.memory_per_chip_bytes);
    }
}

TEST(PlanSearch, InterleavingIsTriedOnPipelinesOnly) {
  PlanSearchOptions o = options();
  o.micro_batch = {1};
  o.zero = {1};
  o.recompute = {Recompute::kNone};
  o.virtual_stages = {1, 2};
  const PlanSearchResult r = search_plans(model(), o);
  // TP 1, 2, 4 x (PP 1 once, PP 2 with 1 and 2 chunks); tiny-llama's 2 layers are not 2 x 2
  // chunks: those 3 plans are illegal.
  EXPECT_EQ(r.enumerated, 3u * 3);
  EXPECT_EQ(r.illegal, 3u);
  ASSERT_EQ(r.illegal_reasons.size(), 1u);
  EXPECT_NE(r.illegal_reasons[0].find("chunks"), std::string::npos) << r.illegal_reasons[0];
  o.virtual_stages = {0};
  EXPECT_THROW(search_plans(model(), o), InputError);
}

TEST(PlanSearch, CountsIllegalPlansWithTheirReasons) {
  PlanSearchOptions o = options();
  o.recompute = {Recompute::kNone};
  o.zero = {1};
  o.micro_batch = {1, 3};  // 64 sequences are not whole micro-batches of 3
  o.tp = {2, 8};           // 8 ranks do not divide 4 heads
  o.pp = {1};
  const PlanSearchResult r = search_plans(model(), o);
  EXPECT_EQ(r.enumerated, 4u);
  EXPECT_EQ(r.timed, 1u);
  EXPECT_EQ(r.illegal, 3u);
  ASSERT_FALSE(r.illegal_reasons.empty());
  bool batch = false, heads = false;
  for (const std::string& why : r.illegal_reasons) {
    batch = batch || why.find("micro-batches of 3") != std::string::npos;
    heads = heads || why.find("heads") != std::string::npos;
  }
  EXPECT_TRUE(batch);
  EXPECT_TRUE(heads);
  o.pp = {0};
  EXPECT_THROW(search_plans(model(), o), InputError);
  o.pp = {1};
  o.lnc = {3};  // does not divide a trn1 chip's 2 cores
  EXPECT_THROW(search_plans(model(), o), InputError);
}

// A MoE model's plans try expert parallelism by default: 1, inside each TP group, and across
// each power of two of replicas; the ones that do not split the experts are illegal, counted
// with the reason.
TEST(PlanSearch, MixtureOfExpertsPlansTryExpertParallelism) {
  const graph::ModelConfig m = graph::load_model_config("tiny-qwen3-moe");  // 8 experts, 4 heads
  PlanSearchOptions o = options();
  o.tp = {2};
  o.pp = {1};
  o.micro_batch = {1};
  o.zero = {1};
  o.recompute = {Recompute::kNone};
  const PlanSearchResult r = search_plans(m, o);
  // DP 16: ep 1, 2 (inside TP) and 2 x {2, 4, 8, 16}; 2 x 8 and 2 x 16 spread 8 experts
  // over 16 and 32 cores.
  EXPECT_EQ(r.enumerated, 6u);
  EXPECT_EQ(r.illegal, 2u);
  EXPECT_EQ(r.timed, 4u);
  std::set<int> eps;
  for (const PlanOutcome& p : r.best) {
    eps.insert(p.result.ep);
    EXPECT_EQ(p.bound, plan_bound(p.result));
  }
  EXPECT_EQ(eps, (std::set<int>{1, 2, 4, 8}));
  EXPECT_NE(r.text().find(" EP "), std::string::npos);
  // A dense model tries ep 1 only.
  o.ep = {};
  EXPECT_EQ(search_plans(model(), o).enumerated, 1u);
}

}  // namespace
}  // namespace trnsim::planner
