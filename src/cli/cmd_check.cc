// `trnsim check PROGRAM.s [--chip trn2] [--json]`: the race checker (core/race/race_check.h) on a
// program in the text form (docs/isa.md, docs/race_check.md). Exit code 0 when it is race-free,
// 1 when it has findings, 2 when it cannot be checked: an unreadable file, an assembly or
// validation error (named by file and line), or a program over the size limit.
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "cli/commands.h"
#include "core/race/race_check.h"
#include "isa/assembler.h"
#include "isa/validate.h"

namespace trnsim::cli {

namespace {

struct CheckOptions {
  std::string program;
  std::string chip;  // empty: the program's .chip, else trn2
  std::vector<std::string> sets;
  bool json = false;
  size_t max_instructions = core::RaceCheckOptions{}.max_instructions;
};

void run_check(const CheckOptions& o, Io& io) {
  const isa::Program prog = isa::assemble_file(o.program);
  std::vector<arch::Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(arch::parse_override(s));
  const std::string name = !o.chip.empty() ? o.chip : !prog.chip.empty() ? prog.chip : "trn2";
  const arch::ChipSpec chip = arch::load_chip(name, overrides);
  // A program that breaks the hardware rules faults before any race matters.
  isa::throw_if_any(isa::validate(prog, chip), o.program);
  core::RaceCheckOptions opts;
  opts.max_instructions = o.max_instructions;
  const core::RaceReport r = core::check_races(prog, chip, opts);
  io.status = !r.checked ? 2 : r.findings.empty() ? 0 : 1;
  if (o.json) {
    nlohmann::json j = core::race_report_json(r);
    j["program"] = o.program;
    io.out << json_text(j) << "\n";
    return;
  }
  // "PROGRAM: finding" per line, as compilers print, so editors can jump to the lines named.
  std::istringstream lines(core::format_race_report(r));
  for (std::string line; std::getline(lines, line);) io.out << o.program << ": " << line << "\n";
}

}  // namespace

void setup_check_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<CheckOptions>();
  auto* sub = app.add_subcommand(
      "check",
      "look for races and deadlocks in a program (exit 0 race-free, 1 findings, 2 bad input)");
  sub->add_option("program", o->program, "program in the text form (docs/isa.md)")->required();
  sub->add_option("--chip", o->chip,
                  "generation whose rules apply (default: the program's .chip, else trn2)");
  sub->add_option(
         "--set", o->sets,
         "override a spec key: --set core.dma.write_barrier=write-after-write (repeatable)")
      ->allow_extra_args(false);
  sub->add_flag("--json", o->json, "the findings as JSON");
  sub->add_option("--max-instructions", o->max_instructions,
                  "executed instructions (loops unrolled) checked at most");
  sub->callback([o, &io] { run_check(*o, io); });
}

}  // namespace trnsim::cli
