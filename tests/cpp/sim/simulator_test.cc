#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <compare>
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

// Handlers that schedule 0-2 more events at random near-future times and priorities (many
// ties, many events scheduled ahead of everything pending, which take the simulator's
// one-event slot instead of the heap): the order of handling must be exactly (time, priority,
// order of scheduling), checked against a plain sorted list of every event ever scheduled.
TEST(Simulator, RandomSchedulesRunInTimePriorityThenSchedulingOrder) {
  struct Key {
    int64_t time;
    int32_t priority;
    uint64_t seq;
    auto operator<=>(const Key&) const = default;
  };
  struct Chain : Component {
    Simulator* sim = nullptr;
    uint64_t rng = 12345, scheduled = 0;
    std::vector<Key> all, handled;
    uint64_t next(uint64_t n) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      return (rng >> 33) % n;
    }
    // At the current time, never before the event being handled (that would be the past).
    void add(Picoseconds t, int32_t min_priority = -1) {
      const auto prio = std::max(static_cast<int32_t>(next(3)) - 1, min_priority);
      all.push_back({t.v, prio, scheduled});
      sim->schedule(t, this, 0, scheduled++, prio);
    }
    void handle(const Event& e) override {
      const Key& k = all[e.payload];
      handled.push_back(k);
      EXPECT_EQ(e.time.v, k.time);
      if (scheduled < 20000)
        for (uint64_t n = next(4); n > 0; --n) {
          const auto dt = static_cast<int64_t>(next(4));
          add(e.time + Picoseconds(dt), dt == 0 ? e.priority : -1);
        }
    }
  };
  Simulator sim;
  Chain c;
  c.sim = &sim;
  for (int i = 0; i < 8; ++i) c.add(Picoseconds(static_cast<int64_t>(c.next(10))));
  sim.run();
  EXPECT_TRUE(sim.idle());
  std::vector<Key> want = c.all;
  std::sort(want.begin(), want.end());
  ASSERT_EQ(c.handled.size(), want.size());
  EXPECT_GT(want.size(), 1000u);
  EXPECT_TRUE(c.handled == want);
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
