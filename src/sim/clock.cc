#include "sim/clock.h"

#include <cmath>

#include "base/error.h"
#include "base/int128.h"

namespace trnsim::sim {

namespace {
constexpr uint128 kPsPerSecondOverKhz = 1'000'000'000;  // 1e12 ps/s / 1e3 Hz/kHz
}

Clock Clock::from_ghz(double ghz) {
  if (!(ghz > 0.0) || ghz > 1000.0) throw InputError("", "clock_ghz", "must be in (0, 1000] GHz");
  return Clock(static_cast<uint64_t>(std::llround(ghz * 1e6)));
}

Clock::Clock(uint64_t khz) : khz_(khz) { TRNSIM_ASSERT(khz > 0); }

Picoseconds Clock::cycles_to_ps(uint64_t cycles) const {
  const uint128 num = static_cast<uint128>(cycles) * kPsPerSecondOverKhz;
  return Picoseconds(static_cast<int64_t>((num + khz_ - 1) / khz_));
}

uint64_t Clock::ps_to_cycles(Picoseconds t) const {
  TRNSIM_ASSERT(t.v >= 0);
  return static_cast<uint64_t>(static_cast<uint128>(t.v) * khz_ / kPsPerSecondOverKhz);
}

Picoseconds Clock::next_edge(Picoseconds t) const {
  uint64_t c = ps_to_cycles(t);
  if (cycles_to_ps(c) < t) ++c;
  return cycles_to_ps(c);
}

}  // namespace trnsim::sim
