// The ALU of the Vector, Scalar and GpSimd engines (HARDWARE.md s2.3, s8): FP32 arithmetic with
// IEEE round-to-nearest-even per operation, which is what the host's float arithmetic does
// (the library is built without -ffast-math and the loops below never contract a*b+c into an
// FMA). Conventions where the public documents are silent (HARDWARE.md s11):
//  - max/min propagate NaN (the first NaN operand), like numpy's maximum/minimum, and order
//    -0 below +0;
//  - pow, rsqrt, mod and average are computed in double and rounded once to FP32;
//  - mod is numpy's (floored: the result takes the divisor's sign);
//  - comparisons and logical ops give 1.0 or 0.0 (NaN compares unordered; NaN is "true");
//  - bitwise ops and shifts on FP32 values act on the values converted to int32 (truncated,
//    saturated, NaN -> 0) and give the int32 result as a float; on integer tiles the executor
//    uses alu_bits() on the stored bit patterns instead;
//  - unary ops (bitwise_not, rsqrt, abs) ignore their second operand; bypass returns the first.
#pragma once

#include <cstdint>

#include "isa/instruction.h"

namespace trnsim::core {

float alu(isa::AluOp op, float a, float b);

// out[i] = a[i * sa] op b[i * sb] for i < n; a stride of 0 broadcasts one value.
void alu_array(isa::AluOp op, const float* a, int64_t sa, const float* b, int64_t sb, float* out,
               int64_t n);

// x[0] op x[1] op ... op x[n-1], left to right in FP32 (n >= 1): the engines' row reductions.
float alu_reduce(isa::AluOp op, const float* x, int64_t n);

// Whether op is a bit-vector op (bitwise and/or/xor/not, shifts) or bypass: the ops that can
// run on integer bit patterns.
bool is_bitvec(isa::AluOp op);
// The bit-vector ops on 32-bit patterns (bypass returns a).
uint32_t alu_bits(isa::AluOp op, uint32_t a, uint32_t b);

// Scalar-register ALU (32-bit two's complement, wrapping). Returns false for ops that make no
// sense on registers and for division or modulo by zero.
bool alu_reg(isa::AluOp op, int32_t a, int32_t b, int32_t& out);

// A float as the engines' integer ops see it: truncated toward zero, saturated, NaN -> 0.
int32_t to_i32(float x);

// True for the comparison ops (is_equal .. is_lt).
bool is_comparison(isa::AluOp op);

}  // namespace trnsim::core
