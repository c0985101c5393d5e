// Small builders for timing tests: operands and instructions with the op table's operand
// order (isa/op_table.cc), and the generations' specs.
#pragma once

#include <cstdint>
#include <string>

#include "arch/arch.h"
#include "isa/instruction.h"
#include "isa/program.h"

namespace trnsim::core::testing {

inline const arch::ChipSpec& chip(const std::string& name) {
  static const arch::ChipSpec trn1 = arch::load_chip("trn1");
  static const arch::ChipSpec trn2 = arch::load_chip("trn2");
  static const arch::ChipSpec trn3 = arch::load_chip("trn3");
  if (name == "trn1") return trn1;
  if (name == "trn3") return trn3;
  return trn2;
}

// [parts, free] on chip (free as one dim of unit stride), or rows x free in HBM.
inline isa::AccessPattern onchip(isa::Space s, int parts, int64_t free, num::Format f,
                                 int64_t offset = 0, int start = 0) {
  isa::AccessPattern ap;
  ap.space = s;
  ap.dtype = f;
  ap.start_partition = start;
  ap.num_partitions = parts;
  ap.offset = offset;
  ap.ndim = 1;
  ap.dims[0] = {1, free};
  return ap;
}
inline isa::AccessPattern sbuf(int parts, int64_t free, num::Format f = num::bf16(),
                               int64_t offset = 0) {
  return onchip(isa::Space::kSbuf, parts, free, f, offset);
}
inline isa::AccessPattern psum(int parts, int64_t free, num::Format f = num::fp32(),
                               int64_t offset = 0) {
  return onchip(isa::Space::kPsum, parts, free, f, offset);
}
inline isa::AccessPattern hbm(int rows, int64_t free, num::Format f, int64_t address = 0) {
  isa::AccessPattern ap = onchip(isa::Space::kHbm, rows, free, f, address);
  ap.partition_stride = free;
  return ap;
}

inline isa::Instruction make(isa::Opcode op, isa::Engine e,
                             std::initializer_list<isa::AccessPattern> ops) {
  isa::Instruction ins;
  ins.op = op;
  ins.engine = e;
  for (const auto& ap : ops) ins.operands[static_cast<size_t>(ins.num_operands++)] = ap;
  return ins;
}
inline isa::Instruction load_stationary(isa::AccessPattern st) {
  return make(isa::Opcode::kLoadStationary, isa::Engine::kTensor, {st});
}
inline isa::Instruction matmul(isa::AccessPattern dst, isa::AccessPattern moving) {
  return make(isa::Opcode::kMultiplyMoving, isa::Engine::kTensor, {dst, moving});
}
inline isa::Instruction unary(isa::Opcode op, isa::Engine e, isa::AccessPattern dst,
                              isa::AccessPattern src) {
  return make(op, e, {dst, src});
}
inline isa::Instruction dma_copy(isa::AccessPattern dst, isa::AccessPattern src,
                                 isa::Engine trigger = isa::Engine::kSync, int queue = 0) {
  isa::Instruction ins = make(isa::Opcode::kDmaCopy, trigger, {dst, src});
  ins.p.dma_queue = static_cast<int16_t>(queue);
  return ins;
}
inline isa::Instruction with_wait(isa::Instruction ins, uint16_t sem, int64_t value) {
  ins.waits.push_back({sem, value});
  return ins;
}
inline isa::Instruction with_signal(isa::Instruction ins, uint16_t sem, int64_t delta = 1) {
  ins.signals.push_back({sem, delta});
  return ins;
}

}  // namespace trnsim::core::testing
