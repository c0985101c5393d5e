// The operand structure of an instruction against its op's roles: declared roles first, then
// [P, 1] column operands, each named by exactly the ScalarArg keys that point at it.
#include <fmt/format.h>

#include "isa/op_table.h"

namespace trnsim::isa {

std::string check_operand_structure(const Instruction& inst) {
  const OpInfo& info = op_info(inst.op);
  const int n = inst.num_operands;
  if (n < info.num_roles || n > kMaxOperands)
    return fmt::format("{} takes {} operand(s), got {}", mnemonic(inst.op), info.num_roles, n);
  std::array<bool, kMaxOperands> named{};
  for (ParamKey k : kScalarArgKeys) {
    const int idx = scalar_arg(k, inst.p).operand;
    if (idx < 0) continue;
    if (!info.params.has(k))
      return fmt::format("{} does not take {}", mnemonic(inst.op), param_key_name(k));
    if (idx < info.num_roles || idx >= n)
      return fmt::format("{}=@{} must name a column operand, one after the {} role operand(s)",
                         param_key_name(k), idx, info.num_roles);
    named[static_cast<size_t>(idx)] = true;
  }
  for (int i = info.num_roles; i < n; ++i)
    if (!named[static_cast<size_t>(i)])
      return fmt::format("{} takes {} operand(s); extra operand @{} is not named by {}",
                         mnemonic(inst.op), info.num_roles, i,
                         info.takes_columns() ? "a scalar argument (arg0=@N, bias=@N, ...)"
                                              : "anything (the op takes no column operands)");
  return {};
}

}  // namespace trnsim::isa
