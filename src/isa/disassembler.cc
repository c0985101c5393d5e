#include "isa/disassembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "isa/op_table.h"
#include "isa/operand_text.h"
#include "isa/sync_text.h"
#include "isa/text_numbers.h"

namespace trnsim::isa {

namespace {

std::string label_name(int32_t index) { return fmt::format("L{}", index); }

// `stream_size` >= 0: branch targets inside [0, stream_size] are written as labels.
std::string instruction_text(const Instruction& inst, const Program& prog, int64_t stream_size) {
  const OpInfo& info = op_info(inst.op);
  std::string s(mnemonic(inst.op));
  const int n = std::clamp<int>(inst.num_operands, 0, kMaxOperands);
  const int nw = info.num_writes();
  for (int i = 0; i < n; ++i) {
    const char* sep = i == 0 ? " " : (i == nw ? " <- " : ", ");
    s += sep + format_operand(inst.operands[static_cast<size_t>(i)], prog);
  }
  for (int k = 0; k < kNumParamKeys; ++k) {
    const auto key = static_cast<ParamKey>(k);
    if (!info.params.has(key) || param_is_default(key, inst.p)) continue;
    const int32_t t = inst.p.branch_target;
    const bool as_label = key == ParamKey::kTarget && t >= 0 && t <= stream_size;
    s += fmt::format(" {}={}", param_key_name(key),
                     as_label ? label_name(t) : format_param(key, inst.p));
  }
  if (!inst.name.empty()) s += " name=" + quote(inst.name);
  for (const SemWait& w : inst.waits) s += " wait=" + format_wait(w);
  for (const SemSignal& g : inst.signals) s += " signal=" + format_signal(g);
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", shape[i]);
  return s + "]";
}

}  // namespace

std::string format_instruction(const Instruction& inst, const Program& prog) {
  return instruction_text(inst, prog, -1);
}

std::string disassemble(const Program& prog) {
  std::string s = "# trnsim program (syntax: docs/isa.md)\n";
  if (!prog.chip.empty())
    s += ".chip " + (is_bare_word(prog.chip) ? prog.chip : quote(prog.chip)) + "\n";
  s += fmt::format(".seed {}\n.semaphores {}\n", prog.seed, prog.num_semaphores);
  for (const HbmTensor& t : prog.tensors)
    s += fmt::format(".tensor {} hbm {} {} {} at=0x{:x}\n", t.name, t.dtype.name(),
                     shape_text(t.shape), kTensorKindNames.name(t.kind),
                     static_cast<uint64_t>(t.address));
  for (Engine e : kAllEngines) {
    const auto& stream = prog.stream(e);
    if (stream.empty()) continue;
    const auto size = static_cast<int32_t>(stream.size());
    std::set<int32_t> targets;
    for (const Instruction& inst : stream)
      if (op_info(inst.op).params.has(ParamKey::kTarget) && inst.p.branch_target >= 0 &&
          inst.p.branch_target <= size)
        targets.insert(inst.p.branch_target);
    s += fmt::format("\n.engine {}\n", name_of(e));
    for (int32_t i = 0; i <= size; ++i) {
      if (targets.count(i)) s += label_name(i) + ":\n";
      if (i < size) s += "  " + instruction_text(stream[static_cast<size_t>(i)], prog, size) + "\n";
    }
  }
  return s;
}

}  // namespace trnsim::isa
