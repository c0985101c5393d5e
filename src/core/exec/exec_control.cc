// Control instructions. Semaphore waits and signals have no data semantics: the runner (or the
// timing model) applies Instruction::waits before issue and ::signals at completion. Scalar
// registers and branches step as core/control/control_step.h says, as in the timing sequencer and
// the race checker.
#include "core/control/control_step.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

void exec_nop(ExecContext&) {}

void exec_control(ExecContext& ctx) {
  ControlStep s = step_control(ctx.in, ctx.regs());
  if (!s.ok()) {
    ctx.fault(mem::FaultKind::kRegister, std::move(s.fault));
    return;
  }
  ctx.jump = s.jump;  // the runner checks that it lies in the stream
}

}  // namespace trnsim::core
