#include "core/control/control_flow.h"

#include <bitset>

#include "core/control/control_step.h"
#include "core/control/register_file.h"

namespace trnsim::core {

namespace {

// Registers whose value came from memory, directly or through register ops.
using DataRegisters = std::bitset<RegisterFile::kCount>;

bool reads_data(const isa::Params& p, const DataRegisters& data) {
  const auto is_data = [&](int r) { return r >= 0 && r < RegisterFile::kCount && data[r]; };
  return is_data(p.reg_a) || is_data(p.reg_b);
}

}  // namespace

ExecutionOrder execution_order(const isa::Stream& stream, size_t limit) {
  ExecutionOrder order;
  RegisterFile regs;
  DataRegisters data;
  size_t pc = 0;
  while (pc < stream.size()) {
    if (order.indices.size() >= limit) {
      order.complete = false;
      break;
    }
    const isa::Instruction& in = stream[pc];
    const bool valid_dst = in.p.reg_dst >= 0 && in.p.reg_dst < RegisterFile::kCount;
    if (in.op == isa::Opcode::kBranch && in.p.op0 != isa::AluOp::kBypass &&
        reads_data(in.p, data)) {
      order.complete = false;
      order.data_dependent = true;
      break;
    }
    if (valid_dst && in.op == isa::Opcode::kRegLoad) data.set(static_cast<size_t>(in.p.reg_dst));
    if (valid_dst && in.op == isa::Opcode::kRegSet) data.reset(static_cast<size_t>(in.p.reg_dst));
    if (valid_dst && in.op == isa::Opcode::kRegAlu)
      data.set(static_cast<size_t>(in.p.reg_dst), reads_data(in.p, data));
    order.indices.push_back(static_cast<int32_t>(pc));
    // A fault leaves no jump, so a faulting instruction falls through; so does a jump past
    // the end (as in the timing sequencer).
    const size_t next = step_control(stream[pc], regs).next_pc(pc);
    pc = next <= stream.size() ? next : pc + 1;
  }
  return order;
}

}  // namespace trnsim::core
