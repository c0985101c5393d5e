// The executor's view of an opcode's operand slots, derived from the ISA op table
// (isa/op_table.cc, the one declaration of every op): how many slots it needs, which it writes
// (TensorE reads SBUF and writes PSUM, so the rule depends on the access), and whether it is a
// DMA transfer (an op with an HBM endpoint), whose operands follow the DMA rules rather than
// the issuing engine's. Slots past the declared roles are [P, 1] columns named by ScalarArg
// fields; they are read.
#pragma once

#include <cstdint>

#include "isa/opcode.h"

namespace trnsim::core {

struct OperandRoles {
  uint8_t min_operands = 0;
  uint8_t write_mask = 0;  // bit i: slot i is written
  bool dma = false;
};

OperandRoles operand_roles(isa::Opcode op);

}  // namespace trnsim::core
