// Checks and PSUM output shared by the TensorE instructions (multiply_moving, matmul_mx,
// transpose_pe).
#pragma once

#include "core/exec/exec_context.h"
#include "mem/tile.h"

namespace trnsim::core {

// The PE tile position and size of the instruction are legal for this core: sizes from the
// spec's row/col tile sizes, positions multiples of 32 inside the array.
bool check_pe_tile(ExecContext& ctx);

// The matmul destination (operand 0, [M, N] in PSUM): fp32, or bf16 where the core has BF16
// PSUM; N within the spec's limit for that dtype; inside one PSUM bank when the limit says an
// output fits a bank (NC-v2/v3).
bool check_psum_dst(ExecContext& ctx, int64_t m, int64_t n);

// Writes an FP32 matmul result to operand 0, honouring the accumulate flag: kWhole / kFirst
// overwrite, kMiddle / kLast accumulate (PSUM value decoded to FP32, one FP32 add
// old + result, cast back with the instruction's rounding: bf16 PSUM rounds again).
void write_psum(ExecContext& ctx, mem::Tile& result);

bool is_fp32_class(const num::Format& f);  // fp32 or tf32
bool is_mx_only(const num::Format& f);     // fp4_e2m1, e8m0: not plain matmul / cast inputs

}  // namespace trnsim::core
