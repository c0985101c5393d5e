// Control instructions. Semaphore waits and signals have no data semantics: the runner (or the
// timing model) applies Instruction::waits before issue and ::signals at completion. Scalar
// registers and branches step as core/control/control_step.h says, as in the timing sequencer and
// the race checker.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/control/control_step.h"
#include "core/exec/int_path.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

void exec_nop(ExecContext&) {}

void exec_control(ExecContext& ctx) {
  ControlStep s = step_control(ctx.in, ctx.regs());
  if (!s.ok()) {
    ctx.fault(mem::FaultKind::kRegister, std::move(s.fault));
    return;
  }
  ctx.jump = s.jump;  // the runner checks that it lies in the stream
}

// Operands: src, one element. An integer keeps its bits as int32 (uint32 wraps); a float
// truncates toward zero, saturating, NaN 0 (the conversion scalar_bits uses).
void exec_reg_load(ExecContext& ctx) {
  if (!ctx.regs().valid(ctx.p.reg_dst)) {
    ctx.fault(mem::FaultKind::kRegister,
              fmt::format("destination register r{} does not exist", ctx.p.reg_dst));
    return;
  }
  int32_t v = 0;
  if (is_int(ctx.dtype(0))) {
    std::vector<uint32_t> bits;
    read_bits(ctx, 0, bits);
    if (ctx.failed()) return;
    v = static_cast<int32_t>(bits.at(0));
  } else {
    const mem::Tile& t = ctx.read(0);
    if (ctx.failed()) return;
    const double x = std::trunc(static_cast<double>(t.at(0, 0)));
    v = std::isnan(x) ? 0 : static_cast<int32_t>(std::clamp(x, -2147483648.0, 2147483647.0));
  }
  ctx.regs().set(ctx.p.reg_dst, v);
}

// Operands: dst, one element. The value is the register's, or reg_imm once the sequencer has
// read the register at issue (core/control/dynamic_operands.h).
void exec_reg_store(ExecContext& ctx) {
  int32_t v = static_cast<int32_t>(static_cast<uint32_t>(ctx.p.reg_imm));
  if (ctx.p.reg_a >= 0) {
    if (!ctx.regs().valid(ctx.p.reg_a)) {
      ctx.fault(mem::FaultKind::kRegister,
                fmt::format("source register r{} does not exist", ctx.p.reg_a));
      return;
    }
    v = ctx.regs().get(ctx.p.reg_a);
  }
  if (is_int(ctx.dtype(0))) {
    const auto bits = static_cast<uint32_t>(v);
    write_bits(ctx, 0, &bits);
    return;
  }
  mem::Tile t;
  t.resize(1, 1);
  t.data[0] = static_cast<float>(v);
  ctx.write(0, t);
}

}  // namespace trnsim::core
