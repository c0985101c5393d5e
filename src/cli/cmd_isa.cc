// `trnsim isa [OP...] [--chip NAME [--set K=V]...] [--json]`: the instruction set as the
// assembler takes it (docs/isa.md), from the op table itself; with --chip, which ops the
// generation has (an op that needs a feature the chip lacks fails validation there).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "cli/commands.h"
#include "isa/describe.h"
#include "isa/op_table.h"

namespace trnsim::cli {

namespace {

struct IsaOptions {
  std::vector<std::string> ops;
  std::string chip;
  std::vector<std::string> sets;
  bool json = false;
};

std::vector<isa::Opcode> selected(const std::vector<std::string>& names) {
  std::vector<isa::Opcode> ops;
  if (names.empty())
    for (const isa::OpInfo& info : isa::op_table()) ops.push_back(info.op);
  for (const std::string& n : names) {
    const std::optional<isa::Opcode> op = isa::find_opcode(n);
    if (!op) throw InputError("trnsim isa", n, "not an op of the ISA (`trnsim isa` lists them)");
    ops.push_back(*op);
  }
  return ops;
}

nlohmann::json op_json(const isa::OpInfo& info, const arch::ChipSpec* chip) {
  nlohmann::json engines = nlohmann::json::array(), operands = nlohmann::json::array(),
                 params = nlohmann::json::array();
  for (isa::Engine e : isa::kAllEngines)
    if (info.engines.has(e)) engines.push_back(std::string(isa::name_of(e)));
  for (int i = 0; i < info.num_roles; ++i) {
    const isa::OperandRole& r = info.roles[static_cast<size_t>(i)];
    nlohmann::json spaces = nlohmann::json::array();
    for (isa::Space s : {isa::Space::kSbuf, isa::Space::kPsum, isa::Space::kHbm})
      if (r.spaces.has(s)) spaces.push_back(std::string(isa::name_of(s)));
    operands.push_back({{"name", std::string(r.name)},
                        {"access", r.access == isa::Access::kWrite ? "write" : "read"},
                        {"spaces", spaces},
                        {"dtypes", std::string(isa::kDtypeRuleNames.name(r.dtype))}});
  }
  for (int k = 0; k < isa::kNumParamKeys; ++k)
    if (info.params.has(static_cast<isa::ParamKey>(k)))
      params.push_back(std::string(isa::param_key_name(static_cast<isa::ParamKey>(k))));
  nlohmann::json j = {
      {"op", std::string(isa::mnemonic(info.op))},
      {"engines", engines},
      {"operands", operands},
      {"columns", info.takes_columns()},
      {"params", params},
      {"feature", info.feature == isa::Feature::kNone
                      ? nlohmann::json(nullptr)
                      : nlohmann::json(std::string(isa::kFeatureNames.name(info.feature)))},
      {"doc", std::string(info.doc)}};
  if (chip) j["available"] = isa::has_feature(chip->core, info.feature);
  return j;
}

void run_isa(const IsaOptions& o, Io& io) {
  const std::vector<isa::Opcode> ops = selected(o.ops);
  std::optional<arch::ChipSpec> chip;
  if (!o.chip.empty()) {
    std::vector<arch::Override> overrides;
    for (const std::string& s : o.sets) overrides.push_back(arch::parse_override(s));
    chip = arch::load_chip(o.chip, overrides);
  } else if (!o.sets.empty()) {
    throw InputError("trnsim isa", "--set", "overrides a chip's spec: give --chip too");
  }
  if (o.json) {
    nlohmann::json all = nlohmann::json::array();
    for (isa::Opcode op : ops) all.push_back(op_json(isa::op_info(op), chip ? &*chip : nullptr));
    io.out << json_text(all) << "\n";
    return;
  }
  if (o.ops.empty() && !chip) {
    io.out << isa::describe_isa();
    return;
  }
  for (isa::Opcode op : ops) {
    const isa::OpInfo& info = isa::op_info(op);
    io.out << isa::describe_op(op);
    if (chip && !isa::has_feature(chip->core, info.feature))
      io.out << "    not on " << chip->meta.name << ": its core lacks "
             << isa::kFeatureNames.name(info.feature) << "\n";
  }
}

}  // namespace

void setup_isa_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<IsaOptions>();
  auto* sub = app.add_subcommand(
      "isa", "the instruction set: ops, engines, operands, parameters, names (docs/isa.md)");
  sub->add_option("ops", o->ops, "ops to show (default: every op and the names)");
  sub->add_option("--chip", o->chip, "mark the ops this generation's core lacks");
  sub->add_option("--set", o->sets, "override a spec key of --chip (repeatable)");
  sub->add_flag("--json", o->json,
                "one record per op: op, engines, operands, params, feature, doc (and "
                "available, with --chip)");
  sub->callback([o, &io] { run_isa(*o, io); });
}

}  // namespace trnsim::cli
