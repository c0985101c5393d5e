// Operand facts the cost functions need: elements per partition, where the sources live, the
// dtype class that selects an engine's elements_per_cycle, and the performance-mode factor.
// Operand roles follow the op table's convention: operands[0] is the destination (for ops that
// write a tile), the rest are sources (isa/instruction.h).
#pragma once

#include <cstdint>

#include "arch/core_spec.h"
#include "isa/instruction.h"

namespace trnsim::core {

// Elements per partition the instruction streams: the largest free size of its operands
// (HARDWARE.md s8.1's N; the reduced side of a reduction is the smaller one).
int64_t elements_per_partition(const isa::Instruction& ins);

// First / last operand in `space`, or nullptr.
const isa::AccessPattern* first_operand_in(const isa::Instruction& ins, isa::Space space);
const isa::AccessPattern* last_operand_in(const isa::Instruction& ins, isa::Space space);
// Whether any source operand (operands[1..]) is in `space`.
bool any_source_in(const isa::Instruction& ins, isa::Space space);
// Whether every operand is in `space`.
bool all_operands_in(const isa::Instruction& ins, isa::Space space);
// Whether every operand has a unit-stride innermost dim.
bool all_contiguous(const isa::Instruction& ins);
// Whether some operand steps more than 16 bytes along its innermost streamed dim (the
// innermost dim of more than one element): its SBUF/PSUM port runs at half bandwidth (s3).
bool any_wide_stride(const isa::Instruction& ins);
// Elements per partition as the engine's ports stream them: N, or 2N with a wide stride.
uint64_t streamed_elements(const isa::Instruction& ins);
// Whether every operand is BF16 (the NC-v2 table's fast rules name bf16 alone, ISA-OLD).
bool all_bf16(const isa::Instruction& ins);
// Whether every operand is BF16 or FP16 (the "16-bit float" class of the perf modes).
bool all_bf16_fp16(const isa::Instruction& ins);
// Whether every operand is BF16/FP16, or an FP8 format where the engine lists an FP8 rate.
bool all_fast_class(const isa::Instruction& ins, const arch::EngineSpec& eng);

// Elements per cycle of `eng` for inputs of `f` (HARDWARE.md s2 table): the bf16 / fp8 class
// when the spec lists one, else `other`.
int elements_per_cycle(const arch::EngineSpec& eng, const num::Format& f);

// Speed-up of a performance mode: `mode_cap` (what the mode promises) limited by what the
// datapath can do, elements_per_cycle(dtype) / lanes, where lanes = SBUF partitions (one
// element per partition per cycle is the 1x rate of the s8.1 table). At least 1.
uint64_t perf_factor(const arch::EngineSpec& eng, const num::Format& f, int lanes,
                     uint64_t mode_cap);

// ceil(a / b) for b > 0.
constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace trnsim::core
