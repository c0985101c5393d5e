#include "core/control/control_step.h"

#include <fmt/format.h>

#include "core/exec/alu.h"

namespace trnsim::core {

namespace {

std::string missing(int r, const char* role) {
  return fmt::format("{} register {} does not exist (0..{})", role, r, RegisterFile::kCount - 1);
}

// The right-hand operand of reg_alu and branch; empty when reg_b names no register.
std::optional<int32_t> rhs(const isa::Params& p, const RegisterFile& regs) {
  if (p.reg_b < 0) return static_cast<int32_t>(static_cast<uint32_t>(p.reg_imm));
  if (!regs.valid(p.reg_b)) return std::nullopt;
  return regs.get(p.reg_b);
}

ControlStep fault(std::string message) { return {std::nullopt, std::move(message)}; }

}  // namespace

ControlStep step_control(const isa::Instruction& in, RegisterFile& regs) {
  const isa::Params& p = in.p;
  switch (in.op) {
    case isa::Opcode::kRegSet:
      if (!regs.valid(p.reg_dst)) return fault(missing(p.reg_dst, "destination"));
      regs.set(p.reg_dst, static_cast<int32_t>(static_cast<uint32_t>(p.reg_imm)));
      return {};
    case isa::Opcode::kRegAlu: {
      if (!regs.valid(p.reg_dst)) return fault(missing(p.reg_dst, "destination"));
      if (!regs.valid(p.reg_a)) return fault(missing(p.reg_a, "source"));
      const std::optional<int32_t> b = rhs(p, regs);
      if (!b) return fault(missing(p.reg_b, "source"));
      int32_t out = 0;
      if (!alu_reg(p.op0, regs.get(p.reg_a), *b, out))
        return fault(fmt::format("register op {} with operands {} and {} is not defined",
                                 static_cast<int>(p.op0), regs.get(p.reg_a), *b));
      regs.set(p.reg_dst, out);
      return {};
    }
    case isa::Opcode::kBranch: {
      if (p.branch_target < 0) return fault("branch without a target");
      if (p.op0 == isa::AluOp::kBypass) return {p.branch_target, {}};
      if (!regs.valid(p.reg_a)) return fault(missing(p.reg_a, "condition"));
      const std::optional<int32_t> b = rhs(p, regs);
      if (!b) return fault(missing(p.reg_b, "source"));
      if (!is_comparison(p.op0) && p.op0 != isa::AluOp::kLogicalAnd &&
          p.op0 != isa::AluOp::kLogicalOr)
        return fault("branch condition must be a comparison or logical op");
      int32_t cond = 0;
      alu_reg(p.op0, regs.get(p.reg_a), *b, cond);
      if (cond != 0) return {p.branch_target, {}};
      return {};
    }
    default:  // nop, sem_wait, sem_signal and the data ops: no register effect
      return {};
  }
}

}  // namespace trnsim::core
