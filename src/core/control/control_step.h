// One control instruction (reg_set, reg_alu, branch) over an engine's scalar registers, shared
// by the functional executor (exec_control.cc), the timing sequencer and the race checker's
// unrolling (control_flow.cc) so that the three cannot disagree on where a stream goes next.
//
// Scalar registers (register_file.h), 32-bit two's complement:
//   reg_set   r[reg_dst] = reg_imm (truncated to 32 bits)
//   reg_alu   r[reg_dst] = r[reg_a] op0 rhs            rhs = r[reg_b] if reg_b >= 0 else reg_imm
//   branch    if (op0 == bypass || (r[reg_a] op0 rhs) != 0) jump to branch_target
// so a counted loop is: reg_set i=0 ... body ... reg_alu i=i+1 ; branch to body if i < n.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/control/register_file.h"
#include "isa/instruction.h"

namespace trnsim::core {

struct ControlStep {
  std::optional<int32_t> jump;  // a taken branch's target; else the next instruction follows
  std::string fault;            // not empty: why it faults (mem::FaultKind::kRegister); no effect

  bool ok() const { return fault.empty(); }
  size_t next_pc(size_t pc) const { return jump ? static_cast<size_t>(*jump) : pc + 1; }
};

// Applies `in` to `regs` (any other opcode: no effect). The target is only checked for being
// set: whether it lies in the stream is the caller's to check, the instruction does not know
// its stream.
ControlStep step_control(const isa::Instruction& in, RegisterFile& regs);

}  // namespace trnsim::core
