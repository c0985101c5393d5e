#include "core/exec/operand_roles.h"

#include "isa/op_table.h"

namespace trnsim::core {

OperandRoles operand_roles(isa::Opcode op) {
  const isa::OpInfo& info = isa::op_info(op);
  OperandRoles r;
  r.min_operands = static_cast<uint8_t>(info.num_roles);
  for (int i = 0; i < info.num_roles; ++i) {
    const isa::OperandRole& role = info.roles[static_cast<size_t>(i)];
    if (role.access == isa::Access::kWrite) r.write_mask |= static_cast<uint8_t>(1u << i);
    if (role.spaces.has(isa::Space::kHbm)) r.dma = true;
  }
  return r;
}

}  // namespace trnsim::core
