// An LNC or whole-chip run profiled (docs/profile.md): one ChipRunner run, timing only, that
// keeps each core's dependency graph, then each core's profile (core/timing/timing_profile.h:
// engine split, bound, roofline, critical path, instruction classes) and what only the chip
// has: its time (the slowest core's end), MFU / HFU over all its cores, and HBM traffic per
// stack and for the chip against their bandwidths.
// A core's critical path stays within the core: where another core of its logical core held
// it (core_barrier, sendrecv) the path says so (PathEdge::kPeer) and does not follow it there.
#pragma once

#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "base/units.h"
#include "core/timing/timing_profile.h"
#include "isa/program.h"

namespace trnsim::chip {

// The HBM traffic of the run's cores that sit on one stack (chip_run.h: stack_of).
struct StackTraffic {
  int stack = 0;
  std::vector<int> cores;       // the run's physical cores on it
  double hbm_bytes = 0;         // read + written by their transfers
  double bytes_per_s = 0;       // hbm_bytes over the chip's time
  double peak_bytes_per_s = 0;  // the stack's bandwidth (chip.hbm.bandwidth_gbps / stacks)
};

struct ChipProfile {
  std::string chip;
  int lnc = 1;                // physical cores per logical core
  Picoseconds total;          // the slowest core's end: the run's time
  Picoseconds launch;         // a kernel launch's start-up and tear-down (not in `total`)
  int slowest = 0;            // the core whose end is `total` (the lowest at a tie)
  uint64_t instructions = 0;  // all cores
  // All cores' TensorE work against every core's BF16 peak for the chip's time:
  // mfu = flops / (cores x peak_flops x total), hfu the same with issued_flops.
  double flops = 0, issued_flops = 0;
  double peak_flops = 0;  // one core's, FLOP/s
  double mfu = 0, hfu = 0;
  double hbm_bytes = 0;              // all cores', read + written
  double hbm_bytes_per_s = 0;        // over the chip's time
  double hbm_peak_bytes_per_s = 0;   // the chip's (chip.hbm.bandwidth_gbps)
  std::vector<StackTraffic> stacks;  // the stacks the run's cores sit on, in order
  // The chip's bound is its slowest core's (its roofline verdict): that core's end is the
  // chip's. Cores that end sooner have their own in cores[i].
  std::string bound;
  std::vector<core::CoreProfile> cores;  // by physical core
  bool ok() const;                       // no core has a fault
};

// Runs `programs` (program i on physical core i, in logical cores of `lnc`: the checks of
// ChipRunner) timing-only on one chip and profiles every core. Throws InputError as
// ChipRunner does; a run's faults are in cores[i].result.faults.
ChipProfile profile_chip(const arch::ChipSpec& chip, const std::vector<isa::Program>& programs,
                         int lnc, const core::ProfileOptions& options = {});

}  // namespace trnsim::chip
