// The order in which one stream executes its instructions. Control flow (reg_set, reg_alu,
// branch) reads only the engine's own scalar registers, never semaphores, so it is fixed before
// a run (the race checker unrolls loops with it) unless a branch reads a register that came
// from memory (reg_load): there the order depends on data and stops. Semantics:
// core/control/control_step.h; like the timing sequencer, a control instruction that faults (a bad
// register or target) falls through to the next one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace trnsim::core {

struct ExecutionOrder {
  std::vector<int32_t> indices;  // stream indices in execution order
  bool complete = true;          // false: stopped after `limit` (a long or endless loop)
  bool data_dependent = false;   // stopped at a branch on a register reg_load wrote (complete
                                 // is false too)
};

ExecutionOrder execution_order(const isa::Stream& stream, size_t limit);

}  // namespace trnsim::core
