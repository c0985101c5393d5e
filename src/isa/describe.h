// The op table as text for people (`trnsim isa`): one op's entry, as describe_isa() lists
// every op (isa/op_table.h).
#pragma once

#include <string>

#include "isa/opcode.h"

namespace trnsim::isa {

// "name [engines]", its operands (written <- read, with spaces and dtype rules), parameters,
// the feature it needs and its one-line doc.
std::string describe_op(Opcode op);

}  // namespace trnsim::isa
