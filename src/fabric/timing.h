// Timing mode: a plan's steps as flows on the network (flow_solver.h). Folded (the default)
// simulates one step of a uniform phase and multiplies, and solves each step on its symmetry
// classes (flows that differ only by block remainders, < 0.1 %, count as equal); per-rank simulates
// every step with every flow and resource on its own. Both count the HBM traffic of every transfer
// on the chips that do it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/units.h"
#include "fabric/algorithm.h"
#include "fabric/flow_solver.h"

namespace trnsim::fabric {

struct PhaseTiming {
  std::string name;
  int64_t steps = 0;
  Picoseconds time{0};
  Picoseconds sync{0};       // of `time`: the handshakes before each step (runtime.h)
  int64_t flows = 0;         // flows in one step
  int64_t flow_classes = 0;  // after folding (max over simulated steps)
  int64_t resource_classes = 0;
};

struct Timing {
  Picoseconds device{0};  // sum of the phases' step times
  Picoseconds sync{0};    // of `device`: the steps' handshakes (runtime.h, sync.*)
  std::vector<PhaseTiming> phases;
  std::vector<int64_t> hbm_read, hbm_write;  // bytes per chip of the system
  int64_t link_bytes = 0;                    // bytes x links crossed, all transfers
  int64_t efa_bytes = 0;                     // bytes leaving servers over EFA
};

Timing time_plan(const Plan& plan, const Context& ctx, bool folded);

// The pieces of a step that other timings share (concurrent.h):
// link and EFA bytes of a transfer's resources (`bytes` moved, per use coefficient);
void count_links(const std::vector<Use>& uses, int64_t bytes, const Network& net, Timing& acc);
// HBM bytes read and written per chip (acc.hbm_* sized to the system's chips);
void count_hbm(const Transfer& x, int64_t bytes, const Network& net, Timing& acc);
// the handshakes that open a step (runtime.h, sync.*): the slowest rank's round trips with its
// peers on its server and the slowest network proxy's EFA exchanges; scratch vectors reused.
Picoseconds step_sync(const std::vector<Transfer>& xfers, const Network& net,
                      const RuntimeSpec* runtime, std::vector<std::pair<int32_t, int32_t>>& pairs,
                      std::vector<double>& us);

}  // namespace trnsim::fabric
