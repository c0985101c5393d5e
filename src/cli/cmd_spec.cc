// `trnsim spec`: a Trainium generation's specification, comparisons between generations, and
// the spec schema. All content comes from the arch layer (arch/arch.h); this file only maps
// options to those calls.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "cli/commands.h"

namespace trnsim::cli {

namespace {

struct SpecOptions {
  std::string name;
  bool json = false;
  bool keys = false;
  bool list = false;
  std::vector<std::string> sets;
  std::vector<std::string> compare;
};

void print_json(Io& io, const nlohmann::json& j) { io.out << json_text(j) << "\n"; }

void run_spec(const SpecOptions& o, Io& io) {
  if (o.keys) {
    if (o.json)
      print_json(io, arch::schema_json());
    else
      io.out << arch::format_keys();
    return;
  }
  if (o.list || (o.name.empty() && o.compare.empty())) {
    if (o.json) {
      print_json(io, arch::list_chips());
      return;
    }
    io.out << "Chips in " << (arch::spec_dir() / "chips").string() << ":\n";
    for (const auto& c : arch::list_chips()) io.out << "  " << c << "\n";
    io.out << "Show one with `trnsim spec NAME`, compare with `trnsim spec --compare A B ...`.\n";
    return;
  }
  if (!o.compare.empty()) {
    if (!o.sets.empty() || !o.name.empty()) {
      throw InputError("--compare", "",
                       "takes the chip names itself; give no NAME or --set with it");
    }
    if (o.json)
      print_json(io, arch::compare_json(o.compare));
    else
      io.out << arch::format_compare(o.compare);
    return;
  }
  std::vector<arch::Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(arch::parse_override(s));
  const arch::ChipSpec spec = arch::load_chip(o.name, overrides);
  if (o.json)
    print_json(io, arch::chip_to_json(spec));
  else
    io.out << arch::format_spec(spec);
}

}  // namespace

void setup_spec_command(CLI::App& app, Io& io) {
  auto opts = std::make_shared<SpecOptions>();
  auto* sub = app.add_subcommand(
      "spec", "a Trainium generation's specification: published figures, sources, derivations");
  sub->add_option("name", opts->name,
                  "chip name (trn1, trn2, trn3, trn4-projected, ...) or path to a .toml file");
  sub->add_flag("--json", opts->json, "the full resolved spec with provenance, as JSON");
  sub->add_option("--set", opts->sets,
                  "override a key: --set core.tensor.clock_ghz=3.0 (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--compare", opts->compare,
                  "generation ratios of these chips relative to the first (seed 000's table)");
  sub->add_flag("--keys", opts->keys, "list every spec key with type, unit, range and meaning");
  sub->add_flag("--list", opts->list, "list the chips in the spec directory");
  sub->callback([opts, &io] { run_spec(*opts, io); });
}

}  // namespace trnsim::cli
