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
  // 64-bit arithmetic while it cannot overflow (runs up to ~18e9 cycles): 128-bit division is
  // a library call and this is on every instruction's path.
  constexpr uint64_t kMax64 = UINT64_MAX / 1'000'000'000u - 1;
  if (cycles <= kMax64) {
    const uint64_t num = cycles * 1'000'000'000u;
    return Picoseconds(static_cast<int64_t>((num + khz_ - 1) / khz_));
  }
  const uint128 num = static_cast<uint128>(cycles) * kPsPerSecondOverKhz;
  return Picoseconds(static_cast<int64_t>((num + khz_ - 1) / khz_));
}

uint64_t Clock::ps_to_cycles(Picoseconds t) const {
  TRNSIM_ASSERT(t.v >= 0);
  if (static_cast<uint64_t>(t.v) <= UINT64_MAX / khz_)
    return static_cast<uint64_t>(t.v) * khz_ / 1'000'000'000u;
  return static_cast<uint64_t>(static_cast<uint128>(t.v) * khz_ / kPsPerSecondOverKhz);
}

Picoseconds Clock::next_edge(Picoseconds t) const {
  uint64_t c = ps_to_cycles(t);
  if (cycles_to_ps(c) < t) ++c;
  return cycles_to_ps(c);
}

}  // namespace trnsim::sim
