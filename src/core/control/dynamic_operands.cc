#include "core/control/dynamic_operands.h"

#include <fmt/format.h>

namespace trnsim::core {

bool reads_registers(const isa::Instruction& in) {
  return in.op == isa::Opcode::kRegStore || isa::has_dynamic_operand(in);
}

RegisterResolution resolve_registers(isa::Instruction& in, const RegisterFile& regs) {
  for (int i = 0; i < in.num_operands; ++i) {
    isa::AccessPattern& ap = in.operands[static_cast<size_t>(i)];
    if (!ap.dynamic()) continue;
    if (!regs.valid(ap.dyn_reg))
      return {fmt::format("operand {}: register r{} does not exist (r0..r{})", i, ap.dyn_reg,
                          RegisterFile::kCount - 1)};
    const int32_t r = regs.get(ap.dyn_reg);
    // The DGE's bounds check (NKI oob_mode.error): outside the range the operand was declared
    // with, nothing moves.
    if (r < 0 || r > ap.dyn_max)
      return {fmt::format("operand {}: dynamic offset register r{} = {} outside 0..{}", i,
                          ap.dyn_reg, r, ap.dyn_max),
              true};
    ap = ap.at(r);
  }
  if (in.op == isa::Opcode::kRegStore && in.p.reg_a >= 0) {
    if (!regs.valid(in.p.reg_a))
      return {fmt::format("source register r{} does not exist (r0..r{})", in.p.reg_a,
                          RegisterFile::kCount - 1)};
    in.p.reg_imm = regs.get(in.p.reg_a);
    in.p.reg_a = -1;
  }
  return {};
}

}  // namespace trnsim::core
