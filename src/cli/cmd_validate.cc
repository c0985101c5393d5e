// `trnsim validate [TARGET...] [--json]`: trnsim against published hardware measurements
// (src/validate). Exit code 1 when a case falls outside its band, so scripts can gate on it.
#include <memory>

#include "cli/commands.h"
#include "validate/validate.h"

namespace trnsim::cli {

namespace {

struct ValidateOptions {
  std::vector<std::string> targets;
  bool json = false;
  bool list = false;
};

void run_validate(const ValidateOptions& o, Io& io) {
  if (o.list) {
    for (const validate::Target& t : validate::targets()) io.out << t.name << "  " << t.doc << "\n";
    return;
  }
  const std::vector<validate::Record> records = validate::run_targets(o.targets);
  for (const validate::Record& r : records)
    if (!r.within()) io.status = 1;
  if (o.json)
    io.out << json_text(validate::records_json(records)) << "\n";
  else
    io.out << validate::format_records(records);
}

}  // namespace

void setup_validate_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<ValidateOptions>();
  auto* sub = app.add_subcommand(
      "validate", "compare trnsim with published hardware measurements (docs/VALIDATION.md)");
  sub->add_option("targets", o->targets, "targets to run (default: all; see --list)");
  sub->add_flag("--json", o->json, "one record per case: target, case, measured, simulated, unit");
  sub->add_flag("--list", o->list, "list the targets");
  sub->callback([o, &io] { run_validate(*o, io); });
}

}  // namespace trnsim::cli
