// FastClock must give exactly sim::Clock's results (it is an optimisation, not a model).
#include "core/timing/timing_clock.h"

#include <gtest/gtest.h>

#include <random>

namespace trnsim::core {
namespace {

TEST(FastClock, AgreesWithSimClockEverywhere) {
  std::mt19937_64 rng(12345);
  for (double ghz : {0.96, 1.12, 1.2, 1.4, 2.4, 2.8, 0.001, 999.999}) {
    const sim::Clock ref = sim::Clock::from_ghz(ghz);
    const FastClock fast(ref);
    const uint64_t edge = (UINT64_MAX - 1'000'000'000ull) / 1'000'000'000ull;
    for (uint64_t c :
         {uint64_t{0}, uint64_t{1}, uint64_t{12345}, edge - 1, edge, edge + 1, edge * 4}) {
      const Picoseconds t = ref.cycles_to_ps(c);
      if (t.v < 0) continue;  // beyond the ps range
      EXPECT_EQ(fast.cycles_to_ps(c), t) << ghz << " " << c;
    }
    for (int i = 0; i < 20000; ++i) {
      const int64_t t = static_cast<int64_t>(rng() >> (1 + rng() % 62));
      EXPECT_EQ(fast.ps_to_cycles(Picoseconds(t)), ref.ps_to_cycles(Picoseconds(t)));
      EXPECT_EQ(fast.next_edge(Picoseconds(t)), ref.next_edge(Picoseconds(t))) << ghz << " " << t;
      const uint64_t c = rng() >> (1 + rng() % 63);
      if (ref.cycles_to_ps(c).v >= 0) {
        EXPECT_EQ(fast.cycles_to_ps(c), ref.cycles_to_ps(c));
      }
    }
  }
}

}  // namespace
}  // namespace trnsim::core
