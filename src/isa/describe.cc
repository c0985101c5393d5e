// `trnsim isa`: the op table and the enumerations as text, generated from the declarations so
// the listing cannot drift from what the assembler accepts.
#include "isa/describe.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "isa/op_table.h"
#include "numerics/policy_names.h"

namespace trnsim::isa {

namespace {

std::string engines_text(EngineSet e) {
  std::vector<std::string_view> names;
  for (Engine x : kAllEngines)
    if (e.has(x)) names.push_back(name_of(x));
  return fmt::format("{}", fmt::join(names, "|"));
}

std::string role_text(const OperandRole& r) {
  std::vector<std::string_view> spaces;
  for (Space s : {Space::kSbuf, Space::kPsum, Space::kHbm})
    if (r.spaces.has(s)) spaces.push_back(name_of(s));
  if (r.dtype == DtypeRule::kAny) return fmt::format("{}:{}", r.name, fmt::join(spaces, "|"));
  return fmt::format("{}:{}:{}", r.name, fmt::join(spaces, "|"), kDtypeRuleNames.name(r.dtype));
}

std::string op_line(const OpInfo& info) {
  std::vector<std::string> writes, reads;
  for (int i = 0; i < info.num_roles; ++i) {
    const OperandRole& r = info.roles[static_cast<size_t>(i)];
    (r.access == Access::kWrite ? writes : reads).push_back(role_text(r));
  }
  std::string operands = fmt::format("{}", fmt::join(writes, ", "));
  if (!reads.empty())
    operands += fmt::format("{}{}", writes.empty() ? "" : " <- ", fmt::join(reads, ", "));
  if (info.takes_columns()) operands += " [, column...]";
  std::vector<std::string_view> params;
  for (int k = 0; k < kNumParamKeys; ++k)
    if (info.params.has(static_cast<ParamKey>(k)))
      params.push_back(param_key_name(static_cast<ParamKey>(k)));
  std::string s = fmt::format("{:<24} [{}]\n", mnemonic(info.op), engines_text(info.engines));
  if (!operands.empty()) s += fmt::format("    operands: {}\n", operands);
  if (!params.empty()) s += fmt::format("    params:   {}\n", fmt::join(params, " "));
  if (info.feature != Feature::kNone)
    s += fmt::format("    needs:    {}\n", kFeatureNames.name(info.feature));
  return s + fmt::format("    {}\n", info.doc);
}

template <typename T>
std::string names_line(std::string_view what, const T& table) {
  return fmt::format("  {}: {}\n", what, table.list());
}

}  // namespace

std::string describe_op(Opcode op) { return op_line(op_info(op)); }

std::string describe_isa() {
  std::string s = fmt::format(
      "trnsim ISA: {} ops. Operands are written first, then '<-', then read (docs/isa.md).\n\n",
      kNumOpcodes);
  for (const OpInfo& info : op_table()) s += op_line(info);
  s += "\nEvery op also takes wait=sN>=V, signal=sN+D (repeatable) and name=\"...\".\n";
  s += "\nParameters:\n";
  for (int k = 0; k < kNumParamKeys; ++k) {
    const auto key = static_cast<ParamKey>(k);
    s += fmt::format("  {:<20}{}\n", param_key_name(key), param_key_doc(key));
  }
  s += "\nNames:\n";
  s += names_line("engines", kEngineNames);
  s += names_line("engines (long)", kEngineLongNames);
  s += names_line("spaces", kSpaceNames);
  s += names_line("alu ops", kAluOpNames);
  s += names_line("activation functions", kActFuncNames);
  s += names_line("acc", kAccumulateNames);
  s += names_line("perf_mode", kPerfModeNames);
  s += fmt::format("  rounding: {}, {}, {}\n", num::name_of(num::Rounding::kNearestEven),
                   num::name_of(num::Rounding::kStochastic),
                   num::name_of(num::Rounding::kTowardZero));
  s += names_line("dtype rules", kDtypeRuleNames);
  return s;
}

}  // namespace trnsim::isa
