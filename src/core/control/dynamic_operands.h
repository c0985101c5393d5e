// Register-relative operands at issue. A dynamic operand (isa/access_pattern.h) reads the
// issuing engine's register when the sequencer dispatches it, as does reg_store's value; later
// register ops do not move an instruction already issued. The functional executor resolves at
// execution (it runs in order), the timing sequencer at issue, both with this code.
#pragma once

#include <string>

#include "core/control/register_file.h"
#include "isa/instruction.h"

namespace trnsim::core {

// Whether `in` reads registers when it issues: a dynamic operand, or reg_store's value.
bool reads_registers(const isa::Instruction& in);

struct RegisterResolution {
  std::string fault;          // not empty: why the instruction cannot issue (it does nothing)
  bool out_of_range = false;  // the fault is a register value outside 0..dyn_max
  bool ok() const { return fault.empty(); }
};

// Resolves `in` in place: every dynamic operand becomes the static one its register selects, and
// reg_store carries its register's value as reg_imm (reg_a = -1); or says why it cannot (a
// register that does not exist, a value outside 0..dyn_max).
RegisterResolution resolve_registers(isa::Instruction& in, const RegisterFile& regs);

}  // namespace trnsim::core
