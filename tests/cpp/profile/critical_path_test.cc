// The critical path of a hand-made dependency graph (profile/critical_path.h), and the roofline
// of plain numbers (profile/roofline.h).
#include "profile/critical_path.h"

#include <gtest/gtest.h>

#include "profile/roofline.h"

namespace trnsim::profile {
namespace {

Picoseconds ps(int64_t v) { return Picoseconds(v); }

// Lane 0: a (0..10) then b (released by a at 10, ends 30); lane 1: c (0..25) released by
// nothing, d (released by b at 30, ends 50); e on lane 1 (0..40) is off the path.
DependencyGraph diamond() {
  DependencyGraph g;
  g.set_labels(5);
  const uint32_t a = g.add({ps(0), ps(10), kNoNode, 0, 0, 0});
  const uint32_t b = g.add({ps(10), ps(30), a, 1, 0, 1});
  g.add({ps(0), ps(25), kNoNode, 2, 1, 0});
  g.add({ps(30), ps(50), b, 3, 1, 2});
  g.add({ps(0), ps(40), kNoNode, 4, 1, 0});
  return g;
}

TEST(CriticalPath, WalksBackFromTheLastNodeToEnd) {
  const DependencyGraph g = diamond();
  const CriticalPath p = critical_path(g, 2, 3, 10);
  EXPECT_EQ(p.nodes, (std::vector<uint32_t>{0, 1, 3}));
  EXPECT_EQ(p.length, 3u);
  EXPECT_EQ(p.time, ps(50));
  // a owns 0..10, b 10..30, d 30..50.
  EXPECT_EQ(p.per_lane, (std::vector<Picoseconds>{ps(30), ps(20)}));
  EXPECT_EQ(p.edges, (std::vector<uint64_t>{1, 1, 1}));
  ASSERT_EQ(p.top.size(), 3u);
  EXPECT_EQ(p.top[0].time, ps(20));  // b and d tie at 20: lane order puts b first
  EXPECT_EQ(p.top[0].label, 1u);
  EXPECT_EQ(p.top[1].label, 3u);
  EXPECT_EQ(p.top[2].label, 0u);
  EXPECT_EQ(critical_path(g, 2, 3, 1).top.size(), 1u);
}

TEST(CriticalPath, SharesAddUpEvenWhenAReleaseComesLate) {
  DependencyGraph g;
  g.set_labels(2);
  // b is released at 20, after a's end: a owns up to then. c is released at 60, after b's
  // end: b owns the gap up to 60, as nothing else held c.
  const uint32_t a = g.add({ps(5), ps(15), kNoNode, 0, 0, 0});
  const uint32_t b = g.add({ps(20), ps(40), a, 1, 1, 1});
  g.add({ps(60), ps(70), b, 0, 0, 1});
  const CriticalPath p = critical_path(g, 2, 2, 10);
  Picoseconds sum;
  for (Picoseconds t : p.per_lane) sum += t;
  EXPECT_EQ(sum, ps(70));
  EXPECT_EQ(p.per_lane[0], ps(10 + 20));  // c 60..70, a 0..20 (its lane owns the start)
  EXPECT_EQ(p.per_lane[1], ps(40));       // b 20..60
}

TEST(CriticalPath, AnEmptyGraphHasNoPath) {
  const CriticalPath p = critical_path(DependencyGraph{}, 3, 2, 5);
  EXPECT_EQ(p.length, 0u);
  EXPECT_EQ(p.per_lane.size(), 3u);
  EXPECT_TRUE(p.top.empty());
}

TEST(Roofline, MfuHfuAndTheVerdict) {
  RooflineInput in;
  in.time = Picoseconds(1'000'000'000);  // 1 ms
  in.flops = 50e9;                       // 50 TFLOPS achieved
  in.issued_flops = 60e9;
  in.peak_flops = 100e12;
  in.seconds_at_peak = 0.5e-3;
  in.hbm_bytes = 100e6;  // 100 GB/s
  in.hbm_peak = 400e9;
  in.bound = "pe";
  in.bound_share = 0.6;
  Roofline r = roofline(in);
  EXPECT_DOUBLE_EQ(r.mfu, 0.5);
  EXPECT_DOUBLE_EQ(r.hfu, 0.6);
  EXPECT_DOUBLE_EQ(r.mfu_dtype, 0.5);
  EXPECT_DOUBLE_EQ(r.hbm_share, 0.25);
  EXPECT_DOUBLE_EQ(r.intensity, 500);
  EXPECT_DOUBLE_EQ(r.ridge, 250);
  EXPECT_EQ(r.roof, "compute");
  EXPECT_EQ(r.verdict, "pe");
  in.hbm_bytes = 380e6;  // 95 % of HBM's ceiling: more than TensorE's 60 %
  r = roofline(in);
  EXPECT_EQ(r.verdict, "hbm");
  EXPECT_EQ(r.roof, "memory");
  EXPECT_DOUBLE_EQ(r.attainable_flops, r.intensity * 400e9);
  in.hbm_bytes = 100e6;
  in.bound = "latency";
  in.bound_share = 0.3;
  EXPECT_EQ(roofline(in).verdict, "latency");
  in.time = Picoseconds(0);
  EXPECT_EQ(roofline(in).verdict, "none");
}

}  // namespace
}  // namespace trnsim::profile
