// Programs to text (docs/isa.md). Exact: assemble(disassemble(p)) == p for every program whose
// instructions set only the Params their op takes (validation reports any other field), and
// disassemble(assemble(disassemble(p))) == disassemble(p).
#pragma once

#include <string>

#include "isa/program.h"

namespace trnsim::isa {

std::string disassemble(const Program& prog);

// One instruction as the text form writes it (branch targets as instruction indices), for
// traces and diagnostics. `prog` names HBM operands by tensor.
std::string format_instruction(const Instruction& inst, const Program& prog);

}  // namespace trnsim::isa
