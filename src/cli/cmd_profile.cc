// `trnsim profile KERNEL_OR_PROGRAM [ARGS...] --chip trn2 [--set KEY=VALUE] [--json]`: one
// kernel or text program timed on one NeuronCore, with what a profiler shows (docs/profile.md):
// where each engine's time went, the bound, MFU and HFU, HBM bandwidth and the roofline, the
// critical path (each engine's share, its top instructions) and the instruction classes. The
// target is resolved as `trnsim run` resolves it (run_target.h); an NKI .py file is traced by
// the Python package first (trnsim/_kernel_cli.py). With --lnc N or --cores N (as `trnsim run`
// takes them) it runs on several physical cores (chip/chip_profile.h): the chip's figures,
// then each core's profile.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "arch/arch.h"
#include "base/error.h"
#include "chip/chip_profile.h"
#include "chip/chip_profile_report.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/run_target.h"
#include "core/timing/profile_report.h"
#include "core/timing/timing_profile.h"
#include "kernels/registry.h"

namespace trnsim::cli {

namespace {

struct ProfileOptions {
  RunTarget target;
  std::string chip = "trn2";
  std::vector<std::string> sets;
  bool json = false;
  std::string plot;
  size_t top = 10;
  std::optional<int> lnc;
  std::optional<int> cores;
  uint64_t max_instructions = kDefaultMaxInstructions;
  std::string max_sim_time = "60s";
};

nlohmann::json manifest(const ProfileOptions& o, const Io& io) {
  nlohmann::json m = {{"trnsim", TRNSIM_VERSION},
                      {"commit", commit()},
                      {"command", io.command_line},
                      {"target", o.target.target},
                      {"args", o.target.args},
                      {"chip", o.chip},
                      {"overrides", o.sets},
                      {"mode", "timing"},
                      {"spec_dir", arch::spec_dir().string()}};
  if (o.lnc || o.cores) {  // a one-core profile's manifest stays as it was
    m["lnc"] = o.lnc ? nlohmann::json(*o.lnc) : nlohmann::json();
    m["cores"] = o.cores ? nlohmann::json(*o.cores) : nlohmann::json();
  }
  return m;
}

// --lnc / --cores: the programs of `trnsim run` with the same options, profiled together.
void run_chip_profile(const ProfileOptions& o, const arch::ChipSpec& chip,
                      const core::ProfileOptions& po, Io& io) {
  const CorePrograms c = build_target_cores(o.target, chip, o.lnc, o.cores);
  const chip::ChipProfile p = chip::profile_chip(chip, c.programs, c.lnc, po);
  if (!p.ok()) io.status = 1;
  if (o.json) {
    nlohmann::json j = chip::chip_profile_json(p);
    j["manifest"] = manifest(o, io);
    io.out << json_text(j) << "\n";
    return;
  }
  io.out << fmt::format("{} on {} (timing profile of {} cores)\n", o.target.target, p.chip,
                        p.cores.size())
         << chip::chip_profile_text(p);
}

void run_profile(const ProfileOptions& o, Io& io) {
  if (o.target.target.empty())
    throw InputError("profile", "TARGET",
                     "name an example kernel (trnsim run --list), a program file or an NKI .py "
                     "file");
  if (!o.plot.empty())
    throw InputError("profile", "--plot " + o.plot,
                     "plots are drawn by the Python package (the `trnsim` that `pip install .` "
                     "installs, with matplotlib); this C++-only binary cannot draw them");
  std::vector<arch::Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(arch::parse_override(s));
  const arch::ChipSpec chip = arch::load_chip(o.chip, overrides);
  core::ProfileOptions po;
  po.top = o.top;
  po.limits = {o.max_instructions, parse_duration(o.max_sim_time, "--max-sim-time")};
  if (o.lnc || o.cores) return run_chip_profile(o, chip, po, io);
  const isa::Program program = build_target(o.target, chip);
  const core::CoreProfile p = core::profile_program(chip, program, po);
  if (!p.result.ok()) io.status = 1;
  if (o.json) {
    nlohmann::json j = core::profile_json(p);
    j["manifest"] = manifest(o, io);
    io.out << json_text(j) << "\n";
    return;
  }
  io.out << fmt::format("{} on {} (timing profile)\n", o.target.target, p.chip)
         << core::profile_text(p);
}

}  // namespace

void setup_profile_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<ProfileOptions>();
  auto* sub = app.add_subcommand(
      "profile",
      "profile an example kernel, a text program or an NKI .py file on one NeuronCore (or, with "
      "--lnc / --cores, several): where each engine's time goes, the bound, MFU / HFU, the "
      "roofline and the critical path");
  sub->add_option("target", o->target.target,
                  "example kernel name (trnsim run --list), a program file in the text form, or "
                  "an NKI kernel file (.py)");
  sub->add_option("args", o->target.args,
                  "kernel arguments: integers in parameter order, or NAME=VALUE");
  sub->add_option("--chip", o->chip, "the generation to run on (default trn2)");
  sub->add_option("--set", o->sets, "override a spec key: --set core.tensor.clock_ghz=3.0");
  sub->add_option("--lnc", o->lnc,
                  "profile on the physical cores of one logical core (1 or 2; an SPMD kernel's "
                  "programs side by side, sharing the HBM stack), as `trnsim run --lnc`; with "
                  "--cores: physical cores per logical core");
  sub->add_option("--cores", o->cores,
                  "profile on this many physical cores of the chip at once, in logical cores of "
                  "--lnc, as `trnsim run --cores`: the chip's figures, then each core's profile");
  sub->add_flag("--json", o->json, "the figures as JSON (exact values), with a manifest");
  sub->add_option("--plot", o->plot,
                  "draw the engine times, the critical path and the roofline to FILE.png or "
                  "FILE.svg (the Python package's trnsim, with matplotlib)");
  sub->add_option("--top", o->top, "instructions listed on the critical path")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{1000000}));
  sub->add_option("--max-instructions", o->max_instructions,
                  "executed instructions (each pass of a loop counts) before the run stops with "
                  "a step_limit fault")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 48));
  sub->add_option("--max-sim-time", o->max_sim_time,
                  "simulated time before the run stops with a time_limit fault (e.g. 2ms, 60s)")
      ->capture_default_str();
  sub->callback([o, &io] { run_profile(*o, io); });
}

}  // namespace trnsim::cli
