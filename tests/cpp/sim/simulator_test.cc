#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "sim/clock.h"

namespace trnsim::sim {
namespace {

struct Recorder : Component {
  std::vector<std::pair<int64_t, uint64_t>> seen;
  Simulator* sim = nullptr;
  void handle(const Event& e) override {
    seen.emplace_back(e.time.v, e.payload);
    if (e.kind == 1) sim->schedule(e.time + Picoseconds(5), this, 0, e.payload + 100);
  }
};

TEST(Simulator, OrdersByTimeThenPriorityThenScheduling) {
  Simulator sim;
  Recorder r;
  r.sim = &sim;
  sim.schedule(Picoseconds(10), &r, 0, 1);
  sim.schedule(Picoseconds(10), &r, 0, 2, /*priority=*/-1);
  sim.schedule(Picoseconds(5), &r, 1, 3);
  sim.schedule(Picoseconds(10), &r, 0, 4);
  sim.run();
  const std::vector<std::pair<int64_t, uint64_t>> want{
      {5, 3}, {10, 2}, {10, 1}, {10, 4}, {10, 103}};
  EXPECT_EQ(r.seen, want);
  EXPECT_EQ(sim.now(), Picoseconds(10));
  EXPECT_EQ(sim.events_handled(), 5u);
}

TEST(Simulator, RunStopsAtLimitAndRejectsThePast) {
  Simulator sim;
  Recorder r;
  r.sim = &sim;
  sim.schedule(Picoseconds(10), &r, 0, 1);
  sim.schedule(Picoseconds(20), &r, 0, 2);
  sim.run(Picoseconds(15));
  EXPECT_EQ(r.seen.size(), 1u);
  EXPECT_FALSE(sim.idle());
  EXPECT_THROW(sim.schedule(Picoseconds(5), &r, 0, 0), InternalError);
}

TEST(Clock, ExactIntegerConversions) {
  const Clock c = Clock::from_ghz(1.4);  // 714.285... ps per cycle
  EXPECT_EQ(c.khz(), 1'400'000u);
  EXPECT_EQ(c.cycles_to_ps(7), Picoseconds(5000));  // 7 cycles = exactly 5 ns
  EXPECT_EQ(c.cycles_to_ps(1), Picoseconds(715));   // rounded up
  EXPECT_EQ(c.cycles_to_ps(1'400'000'000), Picoseconds(1'000'000'000'000));  // 1 s, no drift
  EXPECT_EQ(c.ps_to_cycles(Picoseconds(5000)), 7u);
  EXPECT_EQ(c.ps_to_cycles(Picoseconds(4999)), 6u);
  EXPECT_EQ(c.next_edge(Picoseconds(4999)), Picoseconds(5000));
  EXPECT_EQ(c.next_edge(Picoseconds(5000)), Picoseconds(5000));
  EXPECT_THROW(Clock::from_ghz(0.0), InputError);
}

}  // namespace
}  // namespace trnsim::sim
