// sim::Clock's conversions, made cheap for the sequencers' hot path: the same exact results
// (cycles -> ps rounded up, ps -> cycles floored), in 64-bit arithmetic while the products fit
// (up to ~1.8e10 cycles or ~6e12 ps, seconds of simulated time) and through sim::Clock's
// 128-bit arithmetic beyond. A 128-bit division per conversion was most of the run time; the
// 64-bit division by the clock is a multiply (base/divider.h), a few per simulated instruction.
#pragma once

#include <cstdint>

#include "base/divider.h"
#include "sim/clock.h"

namespace trnsim::core {

class FastClock {
 public:
  explicit FastClock(const sim::Clock& c)
      : clock_(c), khz_(c.khz()), by_khz_(khz_), max_ps64_(UINT64_MAX / khz_) {}

  const sim::Clock& clock() const { return clock_; }

  Picoseconds cycles_to_ps(uint64_t cycles) const {
    if (cycles <= kMaxCycles64)
      return Picoseconds(static_cast<int64_t>(by_khz_.quotient(cycles * kScale + khz_ - 1)));
    return clock_.cycles_to_ps(cycles);
  }
  uint64_t ps_to_cycles(Picoseconds t) const {
    const auto ps = static_cast<uint64_t>(t.v);
    if (t.v >= 0 && ps <= max_ps64_) return ps * khz_ / kScale;
    return clock_.ps_to_cycles(t);
  }
  // The first cycle whose edge is at or after `t`.
  uint64_t cycle_at_or_after(Picoseconds t) const {
    uint64_t c = ps_to_cycles(t);
    if (cycles_to_ps(c) < t) ++c;
    return c;
  }
  Picoseconds next_edge(Picoseconds t) const { return cycles_to_ps(cycle_at_or_after(t)); }

 private:
  static constexpr uint64_t kScale = 1'000'000'000;  // ps per second / Hz per kHz
  static constexpr uint64_t kMaxCycles64 = (UINT64_MAX - kScale) / kScale;
  sim::Clock clock_;
  uint64_t khz_;
  Divider by_khz_;     // / khz_
  uint64_t max_ps64_;  // the largest ps whose product with khz_ fits in 64 bits
};

}  // namespace trnsim::core
