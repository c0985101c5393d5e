// Bit-vector ops on integer tiles (HARDWARE.md s2.3: "bitvec ops treat integers as bit
// patterns"). When every operand of an element-wise op is an integer type and every ALU op is
// a bit-vector op, the executor works on 32-bit patterns instead of FP32 values, so 32-bit
// integers keep all their bits. Narrow signed types are sign-extended on read and every type
// is truncated to its width on write (bit-pattern semantics, no saturation).
#pragma once

#include <cstdint>
#include <vector>

#include "core/exec/exec_context.h"

namespace trnsim::core {

bool is_int(const num::Format& f);
// Every element of operand `slot` as a 32-bit pattern, [rows][cols] in pattern order.
void read_bits(ExecContext& ctx, int slot, std::vector<uint32_t>& out);
void write_bits(ExecContext& ctx, int slot, const uint32_t* v);
// The bits an integer op sees for a scalar argument: column 0 of a [rows, 1] integer operand,
// or an immediate or float column converted to int32 (truncated toward zero, saturated, NaN 0).
bool scalar_bits(ExecContext& ctx, const isa::ScalarArg& a, int64_t rows,
                 std::vector<uint32_t>& out);

}  // namespace trnsim::core
