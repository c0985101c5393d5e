// What a run of several physical cores gives (chip/chip_run.h, chip/spmd_run.h): each core's
// figures, the time of the slowest core, and the text summaries the CLI and Python print.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/units.h"
#include "core/timing/timing_result.h"

namespace trnsim::chip {

// A functional-only run's figures: values, counts and faults, no time.
core::TimingResult without_time(core::TimingResult timed);

struct ChipResult {
  // By physical core. Each core's `events` counts the shared simulator's events (the run's).
  std::vector<core::TimingResult> cores;
  Picoseconds total;   // the slowest core's end
  Picoseconds launch;  // the launch's start-up and tear-down (TimingResult::launch)
  Picoseconds latency() const { return total + launch; }
  uint64_t instructions = 0;  // all cores
  int lnc = 0;                // physical cores per logical core (0: all of them, one LNC)
  bool ok() const;
  // Appends one core's result: the run's total, launch and instruction count follow.
  void add(core::TimingResult r);
  std::string faults_text() const;  // every core's faults, one per line, "core N: ..."
  std::string summary() const;      // chip_summary(cores, total, lnc)
};

// "logical core of N physical cores (LNC=N): T us, I instructions, F faults" when the cores
// form one logical core (lnc 0 or the core count), else "chip of N physical cores (G logical
// cores of LNC=L): ..."; then each core's TimingResult::summary().
std::string chip_summary(std::span<const core::TimingResult> cores, Picoseconds total, int lnc);

}  // namespace trnsim::chip
