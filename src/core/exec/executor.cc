#include "core/exec/executor.h"

#include <fmt/format.h>

#include "core/control/dynamic_operands.h"
#include "core/exec/exec_context.h"
#include "core/exec/operand_roles.h"
#include "core/exec/semantics.h"
#include "isa/op_table.h"
#include "mem/access_rules.h"

namespace trnsim::core {

Executor::Executor(const arch::CoreSpec& core, const ExecOptions& opts, mem::Hbm& hbm)
    : st_(core, opts, hbm) {}

bool Executor::check_operands(ExecContext& ctx) {
  const OperandRoles roles = operand_roles(ctx.in.op);
  if (ctx.in.num_operands < roles.min_operands || ctx.in.num_operands > isa::kMaxOperands)
    return ctx.fault(mem::FaultKind::kShape, fmt::format("{} operands given, {} needed",
                                                         ctx.in.num_operands, roles.min_operands));
  for (int i = 0; i < ctx.in.num_operands; ++i) {
    const isa::AccessPattern& ap = ctx.ap(i);
    std::optional<mem::Fault> f = st_.memory.check(ap);
    if (!f) {
      if (roles.dma) {
        f = mem::check_dma_space(ap);
      } else {
        const auto access = (roles.write_mask >> i) & 1u ? mem::Access::kWrite : mem::Access::kRead;
        f = mem::check_engine_space(ctx.engine, ap, access);
        // MX scales are exempt, as in validation (isa/validate_access.cc).
        if (!f && st_.opts.enforce_start_partition &&
            isa::operand_role(ctx.in.op, i).dtype != isa::DtypeRule::kMxScale)
          f = mem::check_start_partition(ap);
      }
    }
    if (f) {
      f->instruction_id = ctx.id;
      f->instruction = instruction_label(ctx.in, ctx.engine, ctx.id);
      f->message = fmt::format("operand {}: {}", i, f->message);
      st_.faults.add(std::move(*f));
      return false;
    }
  }
  return true;
}

ExecResult Executor::execute(const isa::Instruction& given, isa::Engine engine,
                             uint64_t instruction_id) {
  // Register-relative operands read the engine's registers now (the timing model resolves them
  // at issue and hands over static ones).
  std::optional<isa::Instruction> resolved;
  if (reads_registers(given)) {
    resolved = given;
    const RegisterResolution r =
        resolve_registers(*resolved, st_.regs[static_cast<size_t>(engine)]);
    if (!r.ok()) {
      ExecContext ctx(st_, given, engine, instruction_id);
      ctx.fault(r.out_of_range ? mem::FaultKind::kIndexRange : mem::FaultKind::kRegister, r.fault);
      return {false, std::nullopt};
    }
  }
  const isa::Instruction& in = resolved ? *resolved : given;
  ExecContext ctx(st_, in, engine, instruction_id);
  const SemanticsFn fn = semantics_for(in.op);
  if (fn == nullptr) {
    ctx.fault(mem::FaultKind::kUnsupported, "no semantics registered for this opcode");
    return {false, std::nullopt};
  }
  if (!check_operands(ctx)) return {false, std::nullopt};
  if (in.p.rounding == num::Rounding::kStochastic && !st_.opts.stochastic_rounding) {
    ctx.fault(mem::FaultKind::kUnsupported, "stochastic rounding is not available on this chip");
    return {false, std::nullopt};
  }
  fn(ctx);
  return {!ctx.failed(), ctx.jump};
}

}  // namespace trnsim::core
