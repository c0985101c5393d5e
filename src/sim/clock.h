// A clock domain. Engines run at different clocks (HARDWARE.md s1: e.g. TensorE 2.8 GHz and
// VectorE 1.12 GHz on NC-v2); time stays integer picoseconds, so cycle <-> time conversion is
// exact integer arithmetic on the frequency in kHz, with no accumulated drift.
#pragma once

#include <cstdint>

#include "base/units.h"

namespace trnsim::sim {

class Clock {
 public:
  // `ghz` is rounded to the nearest kHz (every published clock is a whole number of MHz).
  static Clock from_ghz(double ghz);
  explicit Clock(uint64_t khz);

  uint64_t khz() const { return khz_; }
  // Time of `cycles` cycles, rounded up to a whole picosecond.
  Picoseconds cycles_to_ps(uint64_t cycles) const;
  // Whole cycles elapsed by time `t` (floor).
  uint64_t ps_to_cycles(Picoseconds t) const;
  // The first clock edge at or after `t`.
  Picoseconds next_edge(Picoseconds t) const;

 private:
  uint64_t khz_;
};

}  // namespace trnsim::sim
