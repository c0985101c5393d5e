// Max-min fair sharing against hand-solved cases, and folding against the unfolded solve.
#include "fabric/flow_solver.h"

#include <gtest/gtest.h>

#include <cmath>

namespace trnsim::fabric {
namespace {

void add(FlowSet& fs, double bytes, std::vector<int64_t> res, int64_t lat_ps = 0) {
  for (int64_t r : res) {
    fs.res.push_back(r);
    fs.coef.push_back(1.0);
  }
  fs.close_flow(bytes, Picoseconds(lat_ps));
}

const CapacityFn kOneGBps = [](int64_t) { return 1e9; };

TEST(FlowSolver, OneFlowRunsAtItsBottleneck) {
  FlowSet fs;
  add(fs, 1e9, {0, 1}, 5);
  const CapacityFn cap = [](int64_t r) { return r == 0 ? 2e9 : 1e9; };
  EXPECT_EQ(solve_step(fs, cap, false).duration.v, 1'000'000'000'000 + 5);
}

TEST(FlowSolver, TwoFlowsShareALinkAndTheShortOneFreesIt) {
  // Flows of 1 GB and 3 GB on one 1 GB/s link: both at 0.5 GB/s until the first ends at 2 s,
  // then the second alone: 2 GB left... 3 - 1 = 2 GB at 1 GB/s, ends at 4 s.
  FlowSet fs;
  add(fs, 1e9, {0});
  add(fs, 3e9, {0});
  EXPECT_EQ(solve_step(fs, kOneGBps, false).duration.v, 4'000'000'000'000);
}

TEST(FlowSolver, MaxMinGivesTheUnconstrainedFlowTheRest) {
  // Link 0 (1 GB/s) carries A and B; link 1 (1 GB/s) carries B and C; link 2 (10 GB/s) C.
  // Max-min: all at 0.5. A and B end at 2 s (1 GB each); C (4 GB) has 1 GB/s after: 2 + 3 = 5 s.
  FlowSet fs;
  add(fs, 1e9, {0});
  add(fs, 1e9, {0, 1});
  add(fs, 4e9, {1, 2});
  const CapacityFn cap = [](int64_t r) { return r == 2 ? 10e9 : 1e9; };
  EXPECT_EQ(solve_step(fs, cap, false).duration.v, 5'000'000'000'000);
}

TEST(FlowSolver, ACoefficientCountsTheFlowTwice) {
  FlowSet fs;
  fs.res.push_back(0);
  fs.coef.push_back(2.0);
  fs.close_flow(1e9, Picoseconds(0));
  EXPECT_EQ(solve_step(fs, kOneGBps, false).duration.v, 2'000'000'000'000);
}

TEST(FlowSolver, FoldingARingGivesOneClassAndTheSameTime) {
  // A ring of 64 chips on a ring of links: flow i uses link i and the DMA of i.
  FlowSet fs;
  for (int64_t i = 0; i < 64; ++i) add(fs, 1e6 * 3, {i, 1000 + i}, 1500);
  const StepTiming f = solve_step(fs, kOneGBps, true);
  const StepTiming u = solve_step(fs, kOneGBps, false);
  EXPECT_EQ(f.flow_classes, 1);
  EXPECT_EQ(f.resource_classes, 1);
  EXPECT_EQ(u.flow_classes, 64);
  EXPECT_EQ(f.duration, u.duration);
}

TEST(FlowSolver, FoldingKeepsUnequalLoadsApart) {
  // Two flows share link 0; a third is alone on link 1; all three also cross a shared link 9.
  FlowSet fs;
  add(fs, 1e9, {0, 9});
  add(fs, 1e9, {0, 9});
  add(fs, 1e9, {1, 9});
  const CapacityFn cap = [](int64_t r) { return r == 9 ? 100e9 : 1e9; };
  const StepTiming f = solve_step(fs, cap, true);
  const StepTiming u = solve_step(fs, cap, false);
  EXPECT_EQ(f.flow_classes, 2);
  EXPECT_EQ(f.duration, u.duration);
  EXPECT_EQ(u.duration.v, 2'000'000'000'000);
}

}  // namespace
}  // namespace trnsim::fabric
