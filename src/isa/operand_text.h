// The text form of one operand (docs/isa.md, "Operands"):
//   sbuf[START:END]+BYTES [[STRIDE,SIZE],...] DTYPE       on chip: partitions START..END-1
//   TENSOR[START:END(:ROWSTRIDE)]+ELEMS [[..]] (DTYPE)     HBM, by tensor name; ROWSTRIDE in
//                                                         elements defaults to the tensor's row
//   hbm[START:END:ROWSTRIDE]+ADDRESS [[..]] DTYPE          HBM by byte address
// In HBM the "partitions" are rows; validation requires START = 0 there.
#pragma once

#include <string>

#include "isa/access_pattern.h"
#include "isa/line_cursor.h"
#include "isa/program.h"

namespace trnsim::isa {

// Exact: parse_operand(format_operand(ap, prog), prog) is the same AccessPattern.
std::string format_operand(const AccessPattern& ap, const Program& prog);
AccessPattern parse_operand(LineCursor& cur, const Program& prog);

}  // namespace trnsim::isa
