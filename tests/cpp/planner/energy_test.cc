// planner/energy.h: the power model closes on the chip's full-load power, each term is its
// count times its unit energy, and the serving and training results carry what it gives.
#include "planner/energy.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/model_config.h"
#include "planner/serve.h"
#include "planner/serve_load.h"
#include "planner/train.h"

namespace trnsim::planner {
namespace {

// TensorE flat out, HBM and the links at their peaks for one second: exactly tdp_w.
TEST(Energy, APeakSecondIsTheChipsFullLoadPower) {
  for (const char* name : {"trn1", "trn2", "trn3"}) {
    SCOPED_TRACE(name);
    const arch::ChipSpec chip = arch::load_chip(name);
    const PowerModel p = power_model(chip);
    EXPECT_GT(p.tensor_busy_w, 0);
    const Energy e = energy_of(p, 1.0, 1, p.bf16_flops_per_s, chip.chip.hbm.bandwidth_gbps * 1e9,
                               chip.chip.link.bandwidth_gbps * 1e9);
    EXPECT_NEAR(e.joules(), *chip.chip.power.tdp_w, 1e-9 * e.joules());
    EXPECT_NEAR(e.mean_power_w(), *chip.chip.power.tdp_w, 1e-9 * e.joules());
    // Idle: static power only, per chip.
    const Energy idle = energy_of(p, 2.0, 4, 0, 0, 0);
    EXPECT_DOUBLE_EQ(idle.joules(), 2.0 * 4 * *chip.chip.power.static_w);
  }
}

TEST(Energy, EachTermIsItsCountTimesItsUnitEnergy) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  const PowerModel p = power_model(chip);
  EXPECT_DOUBLE_EQ(p.hbm_j_per_byte, *chip.chip.power.hbm_pj_per_byte * 1e-12);
  const Energy e = energy_of(p, 0.5, 2, 1e12, 1e9, 1e8);
  EXPECT_DOUBLE_EQ(e.static_j, p.static_w * 2 * 0.5);
  EXPECT_DOUBLE_EQ(e.tensor_j, p.tensor_busy_w * 1e12 / p.bf16_flops_per_s);
  EXPECT_DOUBLE_EQ(e.hbm_j, p.hbm_j_per_byte * 1e9);
  EXPECT_DOUBLE_EQ(e.link_j, p.link_j_per_byte * 1e8);
  const Energy twice = scaled(e, 2);
  EXPECT_DOUBLE_EQ(twice.joules(), 2 * e.joules());
  EXPECT_DOUBLE_EQ(twice.mean_power_w(), e.mean_power_w());
}

TEST(Energy, IncompleteOrImpossiblePowerDataIsRefused) {
  arch::ChipSpec chip = arch::load_chip("trn2");
  chip.chip.power.hbm_pj_per_byte.reset();
  EXPECT_THROW(power_model(chip), InputError);
  EXPECT_THROW(power_model_if_any(chip), InputError);  // some keys, not all: refused
  chip.chip.power = {};
  EXPECT_FALSE(power_model_if_any(chip));  // none: no energy figures
  chip = arch::load_chip("trn2");
  chip.chip.power.tdp_w = 200;  // less than static + HBM + links at their peaks
  EXPECT_THROW(power_model(chip), InputError);
}

const graph::ModelConfig& tiny() {
  static const graph::ModelConfig m = graph::load_model_config("tiny-llama");
  return m;
}

// A batch's energy covers its end-to-end time: the prefill and every decode step.
TEST(Energy, ServingCountsEveryStep) {
  ServeOptions o;
  o.chip = "trn2";
  o.tp = 2;
  o.input_tokens = 100;
  o.output_tokens = 20;
  const ServeResult r = serve(tiny(), o);
  ASSERT_TRUE(r.energy && r.power);
  EXPECT_NEAR(r.energy->seconds, r.e2e_ms / 1e3, 1e-9);
  EXPECT_EQ(r.energy->chips, 1);
  EXPECT_NEAR(r.energy->static_j, r.power->static_w * r.e2e_ms / 1e3, 1e-9);
  EXPECT_NEAR(r.joules_per_output_token * 20, r.energy->joules(), 1e-9);
  EXPECT_GT(r.energy->tensor_j, 0);
  EXPECT_GT(r.energy->hbm_j, 0);
  EXPECT_EQ(r.energy->link_j, 0);  // two cores of one chip
  LoadOptions l;
  l.rate = 50;  // idle gaps between requests, at static power
  l.requests = 4;
  const LoadResult lr = serve_load(tiny(), o, l);
  ASSERT_TRUE(lr.energy);
  EXPECT_NEAR(lr.energy->seconds, lr.makespan_ms / 1e3, 1e-9);  // idle gaps included
}

TEST(Energy, TrainingStepOnEveryChip) {
  TrainOptions o;
  o.system = "trn1.32xlarge";
  o.tp = 4;
  o.dp = 8;
  o.seq = 128;
  o.global_batch = 8;
  const TrainResult r = train(tiny(), o);
  ASSERT_TRUE(r.energy && r.power);
  EXPECT_EQ(r.energy->chips, 16);
  EXPECT_NEAR(r.energy->static_j, 16 * r.power->static_w * r.step_time_s, 1e-9);
  EXPECT_GT(r.energy->link_j, 0);  // the DP gradients cross chips
  EXPECT_LE(r.energy->mean_power_w(), 16 * r.power->tdp_w);
}

}  // namespace
}  // namespace trnsim::planner
