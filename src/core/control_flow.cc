#include "core/control_flow.h"

#include "core/alu.h"
#include "core/register_file.h"

namespace trnsim::core {

namespace {

// The next pc after control instruction `in` at `pc`; updates the registers.
size_t step(const isa::Instruction& in, size_t pc, size_t size, RegisterFile& regs) {
  const isa::Params& p = in.p;
  int32_t b = static_cast<int32_t>(static_cast<uint32_t>(p.reg_imm));
  if (p.reg_b >= 0) {
    if (!regs.valid(p.reg_b)) return pc + 1;
    b = regs.get(p.reg_b);
  }
  int32_t out = 0;
  if (in.op == isa::Opcode::kRegSet && regs.valid(p.reg_dst)) {
    regs.set(p.reg_dst, static_cast<int32_t>(static_cast<uint32_t>(p.reg_imm)));
  } else if (in.op == isa::Opcode::kRegAlu && regs.valid(p.reg_dst) && regs.valid(p.reg_a) &&
             alu_reg(p.op0, regs.get(p.reg_a), b, out)) {
    regs.set(p.reg_dst, out);
  } else if (in.op == isa::Opcode::kBranch && p.branch_target >= 0 &&
             static_cast<size_t>(p.branch_target) <= size) {
    if (p.op0 == isa::AluOp::kBypass) return static_cast<size_t>(p.branch_target);
    const bool condition =
        is_comparison(p.op0) || p.op0 == isa::AluOp::kLogicalAnd || p.op0 == isa::AluOp::kLogicalOr;
    if (condition && regs.valid(p.reg_a) && alu_reg(p.op0, regs.get(p.reg_a), b, out) && out != 0)
      return static_cast<size_t>(p.branch_target);
  }
  return pc + 1;
}

}  // namespace

ExecutionOrder execution_order(const std::vector<isa::Instruction>& stream, size_t limit) {
  ExecutionOrder order;
  RegisterFile regs;
  size_t pc = 0;
  while (pc < stream.size()) {
    if (order.indices.size() >= limit) {
      order.complete = false;
      break;
    }
    order.indices.push_back(static_cast<int32_t>(pc));
    const isa::Opcode op = stream[pc].op;
    const bool control =
        op == isa::Opcode::kRegSet || op == isa::Opcode::kRegAlu || op == isa::Opcode::kBranch;
    pc = control ? step(stream[pc], pc, stream.size(), regs) : pc + 1;
  }
  return order;
}

}  // namespace trnsim::core
