// Control instructions. Semaphore waits and signals have no data semantics: the runner (or the
// timing model) applies Instruction::waits before issue and ::signals at completion.
//
// Scalar registers (register_file.h), 32-bit two's complement:
//   reg_set   r[reg_dst] = reg_imm (truncated to 32 bits)
//   reg_alu   r[reg_dst] = r[reg_a] op0 rhs            rhs = r[reg_b] if reg_b >= 0 else reg_imm
//   branch    if (op0 == bypass || (r[reg_a] op0 rhs) != 0) jump to branch_target
// so a counted loop is: reg_set i=0 ... body ... reg_alu i=i+1 ; branch to body if i < n.
#include <fmt/format.h>

#include "core/alu.h"
#include "core/semantics.h"

namespace trnsim::core {

namespace {

bool reg_ok(ExecContext& ctx, int r, const char* role) {
  if (ctx.regs().valid(r)) return true;
  return ctx.fault(mem::FaultKind::kRegister, fmt::format("{} register {} does not exist (0..{})",
                                                          role, r, RegisterFile::kCount - 1));
}

// The right-hand operand of reg_alu and branch.
bool rhs(ExecContext& ctx, int32_t& out) {
  if (ctx.p.reg_b < 0) {
    out = static_cast<int32_t>(static_cast<uint32_t>(ctx.p.reg_imm));
    return true;
  }
  if (!reg_ok(ctx, ctx.p.reg_b, "source")) return false;
  out = ctx.regs().get(ctx.p.reg_b);
  return true;
}

}  // namespace

void exec_nop(ExecContext&) {}

void exec_reg_set(ExecContext& ctx) {
  if (!reg_ok(ctx, ctx.p.reg_dst, "destination")) return;
  ctx.regs().set(ctx.p.reg_dst, static_cast<int32_t>(static_cast<uint32_t>(ctx.p.reg_imm)));
}

void exec_reg_alu(ExecContext& ctx) {
  int32_t b = 0, out = 0;
  if (!reg_ok(ctx, ctx.p.reg_dst, "destination") || !reg_ok(ctx, ctx.p.reg_a, "source") ||
      !rhs(ctx, b))
    return;
  if (!alu_reg(ctx.p.op0, ctx.regs().get(ctx.p.reg_a), b, out)) {
    ctx.fault(mem::FaultKind::kRegister,
              fmt::format("register op {} with operands {} and {} is not defined",
                          static_cast<int>(ctx.p.op0), ctx.regs().get(ctx.p.reg_a), b));
    return;
  }
  ctx.regs().set(ctx.p.reg_dst, out);
}

void exec_branch(ExecContext& ctx) {
  if (ctx.p.branch_target < 0) {
    ctx.fault(mem::FaultKind::kRegister, "branch without a target");
    return;
  }
  if (ctx.p.op0 == isa::AluOp::kBypass) {
    ctx.jump = ctx.p.branch_target;
    return;
  }
  int32_t b = 0, cond = 0;
  if (!reg_ok(ctx, ctx.p.reg_a, "condition") || !rhs(ctx, b)) return;
  if (!is_comparison(ctx.p.op0) && ctx.p.op0 != isa::AluOp::kLogicalAnd &&
      ctx.p.op0 != isa::AluOp::kLogicalOr) {
    ctx.fault(mem::FaultKind::kRegister, "branch condition must be a comparison or logical op");
    return;
  }
  alu_reg(ctx.p.op0, ctx.regs().get(ctx.p.reg_a), b, cond);
  if (cond != 0) ctx.jump = ctx.p.branch_target;
}

}  // namespace trnsim::core
