// Clock conversions (64-bit fast paths) against the plain 128-bit formulas:
// ps = ceil(cycles x 1e9 / kHz), cycles = floor(ps x kHz / 1e9), for every clock of the
// generations' data and odd ones, at small, typical and huge values (the 128-bit fallback).
#include "sim/clock.h"

#include <gtest/gtest.h>

#include <random>

#include "base/int128.h"

namespace trnsim::sim {
namespace {

TEST(Clock, ConversionsMatchTheExactFormulas) {
  std::mt19937_64 rng(7);
  for (uint64_t khz : {1'400'000ull, 2'800'000ull, 1'120'000ull, 960'000ull, 2'400'000ull,
                       1'200'000ull, 1ull, 3ull, 999'983ull, 1'000'000'000ull}) {
    const Clock c(khz);
    for (int i = 0; i < 20000; ++i) {
      const uint64_t cycles = i < 1000 ? static_cast<uint64_t>(i) : rng() >> (rng() % 60 + 4);
      const uint128 num = uint128{cycles} * 1'000'000'000u;
      const uint128 ps = (num + khz - 1) / khz;
      if (ps > INT64_MAX) continue;
      ASSERT_EQ(c.cycles_to_ps(cycles).v, static_cast<int64_t>(ps)) << khz << " kHz " << cycles;
      const int64_t t = static_cast<int64_t>(rng() >> (rng() % 63 + 1));
      ASSERT_EQ(c.ps_to_cycles(Picoseconds(t)),
                static_cast<uint64_t>(uint128(static_cast<uint64_t>(t)) * khz / 1'000'000'000u))
          << khz << " kHz " << t << " ps";
    }
  }
}

}  // namespace
}  // namespace trnsim::sim
