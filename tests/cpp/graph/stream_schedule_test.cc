// The two streams a compiled graph's kernels run on (graph/stream_schedule.h): a collective
// runs beside compute that does not read it, compute that reads it waits, and what each
// kernel adds to the run sums to the makespan.
#include "graph/stream_schedule.h"

#include <gtest/gtest.h>

#include <numeric>

namespace trnsim::graph {
namespace {

Node node(std::vector<int> in, std::vector<int> out = {}) {
  Node n;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

Picoseconds us(int64_t x) { return Picoseconds(x * 1000000); }

// Run: v0 -> [matmul a] -> v1 -> [reduce-scatter] -> v2; [matmul b] reads v0 only; [norm]
// reads v2. The reduce-scatter (30) hides under b (50); the norm waits for it.
TEST(StreamSchedule, CollectiveRunsBesideComputeThatDoesNotReadIt) {
  StreamSchedule s(4);
  auto run = [&](const Node& n, bool coll, int64_t dur) {
    const Picoseconds start = s.place(coll, s.inputs_ready(n), us(dur));
    s.finish(n, start + us(dur));
    return start;
  };
  EXPECT_EQ(run(node({0}, {1}), false, 40), us(0));   // a
  EXPECT_EQ(run(node({1}, {2}), true, 30), us(40));   // reduce-scatter after a
  EXPECT_EQ(run(node({0}, {3}), false, 50), us(40));  // b beside it
  EXPECT_EQ(run(node({2, 3}), false, 10), us(90));    // the norm after both
  EXPECT_EQ(s.makespan(), us(100));
  const std::vector<Picoseconds> e = s.exposed();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[1], us(0));  // entirely under b
  EXPECT_EQ(std::accumulate(e.begin(), e.end(), Picoseconds(0)), s.makespan());
}

// A collective longer than the compute beside it sticks out by the difference, and a
// dependent chain (all-reduce then the kernel reading it) overlaps nothing.
TEST(StreamSchedule, WhatSticksOutIsExposed) {
  StreamSchedule s(4);
  Picoseconds t = s.place(false, Picoseconds(0), us(10));  // writes v1
  s.finish(node({}, {1}), t + us(10));
  const Node ar = node({1}, {2});
  t = s.place(true, s.inputs_ready(ar), us(25));
  s.finish(ar, t + us(25));
  t = s.place(false, us(10), us(15));  // independent, 15 of the 25 under it
  s.finish(node({}, {3}), t + us(15));
  const Node reader = node({2}, {});
  EXPECT_EQ(s.place(false, s.inputs_ready(reader), us(5)), us(35));
  const std::vector<Picoseconds> e = s.exposed();
  EXPECT_EQ(e[1], us(10));
  EXPECT_EQ(s.makespan(), us(40));
  EXPECT_EQ(std::accumulate(e.begin(), e.end(), Picoseconds(0)), s.makespan());
}

}  // namespace
}  // namespace trnsim::graph
