// Validation driver: program-level rules (tensors, semaphores), then per instruction the
// engine, feature, structure and control rules here and the operand, shape and TensorE rules
// in validate_access.cc, validate_shapes.cc and validate_matmul.cc.
#include "isa/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "isa/validate_context.h"

namespace trnsim::isa {

namespace detail {

std::string operand_label(const Instruction& inst, int i) {
  return fmt::format("operand {} '{}'", i, operand_role(inst.op, i).name);
}

std::string shape_text(const AccessPattern& ap) {
  return fmt::format("[P={}, F={}]", ap.num_partitions, ap.free_elements());
}

}  // namespace detail

namespace {

using detail::Context;

std::vector<num::Dtype> parse_dtypes(const std::vector<std::string>& names) {
  std::vector<num::Dtype> out;
  for (const std::string& n : names) out.push_back(num::parse_format(n).dtype);
  return out;
}

void check_tensors(Context& c) {
  const auto& ts = c.prog.tensors;
  for (size_t i = 0; i < ts.size(); ++i) {
    const HbmTensor& t = ts[i];
    if (t.address < 0)
      c.report(RuleKind::kTensor, "tensor '{}' at negative address {}", t.name, t.address);
    if (std::any_of(t.shape.begin(), t.shape.end(), [](int64_t d) { return d < 1; }))
      c.report(RuleKind::kTensor, "tensor '{}' has a dimension < 1", t.name);
    for (size_t j = 0; j < i; ++j) {
      const HbmTensor& u = ts[j];
      if (u.name == t.name) c.report(RuleKind::kTensor, "tensor '{}' declared twice", t.name);
      if (t.address < u.address + u.bytes() && u.address < t.address + t.bytes())
        c.report(RuleKind::kTensor, "tensors '{}' and '{}' overlap in HBM", u.name, t.name);
    }
  }
  if (c.prog.num_semaphores < 0 || c.prog.num_semaphores > kMaxSemaphores)
    c.report(RuleKind::kSemaphore, "{} semaphores; a core has {}", c.prog.num_semaphores,
             kMaxSemaphores);
}

// Fields of Params outside the op's keys would be lost by the text form and ignored by the
// semantics: report them rather than let them mean something silently.
void check_params(Context& c, const OpInfo& info) {
  const Params& p = c.inst->p;
  Params canon;
  try {
    canon = canonical_params(p, info.params);
  } catch (const InputError& e) {
    c.report(RuleKind::kMalformed, "parameter value '{}' is invalid: {}", e.key(), e.detail());
    return;
  }
  if (canon == p) return;
  std::string extra;
  for (int k = 0; k < kNumParamKeys; ++k) {
    const auto key = static_cast<ParamKey>(k);
    if (!info.params.has(key) && !param_is_default(key, p))
      extra += (extra.empty() ? "" : ", ") + std::string(param_key_name(key));
  }
  if (extra.empty()) extra = "an immediate next to an @N operand reference";
  c.report(RuleKind::kMalformed, "sets parameters {} does not take: {}", mnemonic(info.op), extra);
}

void check_control(Context& c, size_t stream_size) {
  const Instruction& in = *c.inst;
  const Params& p = in.p;
  switch (in.op) {
    case Opcode::kSemWait:
      if (in.waits.empty()) c.report(RuleKind::kMalformed, "sem_wait without a wait=");
      break;
    case Opcode::kSemSignal:
      if (in.signals.empty()) c.report(RuleKind::kMalformed, "sem_signal without a signal=");
      break;
    case Opcode::kRegSet:
    case Opcode::kRegAlu:
    case Opcode::kRegLoad:
      if (p.reg_dst < 0 || p.reg_dst >= kScalarRegisters)
        c.report(RuleKind::kControl, "destination register r{} does not exist (rd=r0..r{})",
                 p.reg_dst, kScalarRegisters - 1);
      if (in.op == Opcode::kRegAlu && (p.reg_a < 0 || p.reg_a >= kScalarRegisters))
        c.report(RuleKind::kControl, "source register r{} does not exist (ra=r0..r{})", p.reg_a,
                 kScalarRegisters - 1);
      break;
    case Opcode::kRegStore:
      if (p.reg_a < 0 || p.reg_a >= kScalarRegisters)
        c.report(RuleKind::kControl, "source register r{} does not exist (ra=r0..r{})", p.reg_a,
                 kScalarRegisters - 1);
      break;
    case Opcode::kBranch:
      if (p.branch_target < 0 || static_cast<size_t>(p.branch_target) > stream_size)
        c.report(RuleKind::kControl, "branch target {} outside the stream [0, {}]", p.branch_target,
                 stream_size);
      if (p.op0 != AluOp::kBypass && p.reg_a < 0)
        c.report(RuleKind::kControl, "conditional branch (op0={}) without ra=rN", name_of(p.op0));
      break;
    default:
      break;
  }
  for (const SemWait& w : in.waits)
    if (w.sem >= c.prog.num_semaphores)
      c.report(RuleKind::kSemaphore, "waits on s{}; the program has {} semaphores", w.sem,
               c.prog.num_semaphores);
  for (const SemSignal& s : in.signals)
    if (s.sem >= c.prog.num_semaphores)
      c.report(RuleKind::kSemaphore, "signals s{}; the program has {} semaphores", s.sem,
               c.prog.num_semaphores);
}

// Returns whether the operands match the op's roles (the later rules assume they do).
bool check_instruction(Context& c, Engine stream, size_t stream_size) {
  const Instruction& in = *c.inst;
  const OpInfo& info = op_info(in.op);
  if (in.engine != stream)
    c.report(RuleKind::kEngine, "instruction of engine {} in the {} stream", name_of(in.engine),
             name_of(stream));
  if (!info.engines.has(stream))
    c.report(RuleKind::kEngine, "{} does not run on the {} engine", mnemonic(in.op),
             name_of(stream));
  if (!has_feature(c.core, info.feature))
    c.report(RuleKind::kFeature, "{} needs {}, which {} does not have", mnemonic(in.op),
             kFeatureNames.name(info.feature), c.core.name);
  if (info.params.has(ParamKey::kRounding) && in.p.rounding == num::Rounding::kStochastic &&
      !c.numerics.stochastic_rounding)
    c.report(RuleKind::kFeature, "stochastic rounding is not available on {}", c.core.name);
  check_params(c, info);
  check_control(c, stream_size);
  if (const std::string err = check_operand_structure(in); !err.empty()) {
    c.report(RuleKind::kMalformed, "{}", err);
    return false;
  }
  detail::check_operands(c);
  detail::check_shapes(c);
  return true;
}

}  // namespace

std::vector<Diagnostic> validate(const Program& prog, const arch::CoreSpec& core,
                                 const arch::NumericsSpec& numerics) {
  std::vector<Diagnostic> out;
  Context c{prog,
            core,
            numerics,
            out,
            parse_dtypes(numerics.tensor_fp8_formats),
            parse_dtypes(core.psum.dtypes)};
  check_tensors(c);
  for (Engine e : kAllEngines) {
    const auto& stream = prog.stream(e);
    std::optional<detail::Stationary> stationary;
    for (size_t i = 0; i < stream.size(); ++i) {
      c.engine = e;
      c.index = static_cast<int32_t>(i);
      c.inst = &stream[i];
      if (check_instruction(c, e, stream.size())) detail::check_matmul(c, stationary);
    }
    c.inst = nullptr;
    c.index = -1;
  }
  // In source order (program-level findings, line 0, first), so the first is the earliest.
  std::stable_sort(out.begin(), out.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.source_line < b.source_line;
  });
  return out;
}

std::vector<Diagnostic> validate(const Program& prog, const arch::ChipSpec& chip) {
  std::vector<Diagnostic> out = validate(prog, chip.core, chip.numerics);
  // The whole chip's HBM bounds every tensor (the cores share it); a tensor past it would have
  // no memory on the device.
  const int64_t hbm = hbm_capacity_bytes(chip);
  std::vector<Diagnostic> past;
  for (const HbmTensor& t : prog.tensors)
    if (t.address + t.bytes() > hbm) {
      Diagnostic d;
      d.kind = RuleKind::kTensor;
      d.message = fmt::format(
          "tensor '{}' ([{}, {}) in HBM, {} bytes) does not fit the {} bytes of {}'s HBM "
          "(chip.hbm.capacity_gib {})",
          t.name, t.address, t.address + t.bytes(), t.bytes(), hbm, chip.meta.name,
          chip.chip.hbm.capacity_gib);
      past.push_back(std::move(d));
    }
  out.insert(out.begin(), past.begin(), past.end());  // program-level: before the instructions
  return out;
}

int64_t hbm_capacity_bytes(const arch::ChipSpec& chip) {
  constexpr double kBytesPerGiB = 1073741824.0;
  return static_cast<int64_t>(std::llround(chip.chip.hbm.capacity_gib * kBytesPerGiB));
}

}  // namespace trnsim::isa
