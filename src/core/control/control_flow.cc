#include "core/control/control_flow.h"

#include "core/control/control_step.h"
#include "core/control/register_file.h"

namespace trnsim::core {

ExecutionOrder execution_order(const isa::Stream& stream, size_t limit) {
  ExecutionOrder order;
  RegisterFile regs;
  size_t pc = 0;
  while (pc < stream.size()) {
    if (order.indices.size() >= limit) {
      order.complete = false;
      break;
    }
    order.indices.push_back(static_cast<int32_t>(pc));
    // A fault leaves no jump, so a faulting instruction falls through; so does a jump past
    // the end (as in the timing sequencer).
    const size_t next = step_control(stream[pc], regs).next_pc(pc);
    pc = next <= stream.size() ? next : pc + 1;
  }
  return order;
}

}  // namespace trnsim::core
