// `trnsim run KERNEL_OR_PROGRAM [ARGS...] --chip trn1 [--chip trn2 ...] [--lnc 2] [--cores 8]`:
// one kernel or text program on one NeuronCore of each chip given (with --lnc, on the physical
// cores of one logical core; with --cores, on that many physical cores of the chip in logical
// cores of --lnc, sharing the HBM stacks), with the run summary (time, per-engine busy,
// TensorE utilisation, HBM traffic, high-water marks, instruction counts, output statistics)
// and, with --trace, a trace per chip: Perfetto protobuf (.perfetto-trace, .pftrace) or Chrome
// JSON (.json), all of the run or, with --trace-window, the part of it in a time window.
#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "arch/arch.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/run_target.h"
#include "kernels/registry.h"
#include "profile/chrome_trace.h"
#include "profile/perfetto_trace.h"
#include "profile/trace.h"

namespace trnsim::cli {

namespace {

struct RunOptions {
  RunTarget target;
  std::vector<std::string> chips;
  std::vector<std::string> sets;
  std::string mode = "functional+timing";
  std::string trace;
  std::string trace_window;  // "START:END"
  uint64_t seed = 0;
  std::optional<int> lnc;
  std::optional<int> cores;
  bool json = false;
  bool list = false;
  bool race_check = true;  // program files: the race checker before the run
  uint64_t max_instructions = kDefaultMaxInstructions;
  std::string max_sim_time = "60s";
};

// With several chips, "out.json" becomes "out-trn1.json", "out-trn2.json", ...
std::string trace_path(const std::string& base, const std::string& chip, bool several) {
  if (!several) return base;
  std::filesystem::path p(base);
  return (p.parent_path() / (p.stem().string() + "-" + chip + p.extension().string())).string();
}

// What --trace-window keeps: [start, end) in picoseconds.
struct TraceWindow {
  Picoseconds start{0}, end{INT64_MAX};
};

// "START:END", each a time in ns or with a unit (ps, ns, us, ms, s); either may be left out
// (from the start, to the end of the run).
TraceWindow parse_trace_window(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || text.find(':', colon + 1) != std::string::npos)
    throw InputError("--trace-window", text,
                     "expected START:END in ns (e.g. 1000:250000 or 1us:2ms)");
  const auto time = [&](std::string_view part, Picoseconds absent) {
    if (part.empty()) return absent;
    static constexpr std::pair<std::string_view, double> kUnits[] = {
        {"", 1e3}, {"ps", 1.0}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
    double value = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    const std::string_view unit(end, static_cast<size_t>(part.data() + part.size() - end));
    for (const auto& [name, ps] : kUnits)
      if (ec == std::errc() && unit == name && value >= 0 && value * ps < 9e18)
        return Picoseconds(static_cast<int64_t>(value * ps));
    throw InputError("--trace-window", text,
                     "expected START:END, each a time in ns or with a unit (ps, ns, us, ms, s)");
  };
  const std::string_view all(text);
  TraceWindow w{time(all.substr(0, colon), Picoseconds(0)),
                time(all.substr(colon + 1), Picoseconds(INT64_MAX))};
  if (!(w.start < w.end)) throw InputError("--trace-window", text, "START must be before END");
  return w;
}

void write_trace(const profile::Trace& trace, const std::string& path) {
  const bool perfetto = profile::trace_format_for(path) == profile::TraceFormat::kPerfetto;
  write_file_atomically(path, "--trace", [&](std::ostream& f) {
    if (perfetto)
      profile::write_perfetto_trace(trace, f);
    else
      profile::write_chrome_trace(trace, f);
  });
}

nlohmann::json manifest(const RunOptions& o, const Io& io) {
  return {{"trnsim", TRNSIM_VERSION},
          {"commit", commit()},
          {"command", io.command_line},
          {"target", o.target.target},
          {"args", o.target.args},
          {"chips", o.chips},
          {"overrides", o.sets},
          {"mode", o.mode},
          {"seed", o.seed},
          {"lnc", o.lnc ? nlohmann::json(*o.lnc) : nlohmann::json()},
          {"cores", o.cores ? nlohmann::json(*o.cores) : nlohmann::json()},
          {"max_instructions", o.max_instructions},
          {"max_sim_time", o.max_sim_time},
          {"race_check", o.race_check},
          {"spec_dir", arch::spec_dir().string()}};
}

void run_kernel_job(const RunOptions& o, Io& io) {
  if (o.list || o.target.target.empty()) {
    if (o.json) {  // the same list as data
      nlohmann::json list = nlohmann::json::array();
      for (const examples::KernelEntry& k : examples::kernel_registry()) {
        nlohmann::json params = nlohmann::json::array();
        for (const examples::KernelParam& p : k.params)
          params.push_back({{"name", std::string(p.name)},
                            {"default", p.default_value},
                            {"doc", std::string(p.doc)}});
        list.push_back(
            {{"name", std::string(k.name)}, {"doc", std::string(k.doc)}, {"params", params}});
      }
      io.out << json_text({{"kernels", list}}) << "\n";
      return;
    }
    io.out << "Example kernels (trnsim run NAME [ARGS...] --chip trn2):\n"
           << examples::describe_kernels()
           << "A program in the text form (docs/isa.md) runs the same way: trnsim run prog.s\n";
    return;
  }
  // The file name says the format; another name (a neuron-profile .ntff) would promise a format
  // that is not written.
  if (!o.trace.empty() && profile::trace_format_for(o.trace) == profile::TraceFormat::kUnknown)
    throw InputError("--trace", o.trace,
                     std::string("traces are Perfetto protobuf or Chrome JSON: ") +
                         profile::kTraceFormatsHelp + "; .ntff traces are not written");
  if (!o.trace_window.empty() && o.trace.empty())
    throw InputError("--trace-window", o.trace_window, "give --trace FILE too");
  const std::optional<TraceWindow> window =
      o.trace_window.empty() ? std::nullopt : std::optional(parse_trace_window(o.trace_window));
  const core::RunMode mode = parse_run_mode(o.mode);
  std::vector<arch::Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(arch::parse_override(s));
  const std::vector<std::string> chips =
      o.chips.empty() ? std::vector<std::string>{"trn2"} : o.chips;
  if (!o.trace.empty() && mode == core::RunMode::kFunctionalOnly)
    throw InputError("--trace", o.trace, "functional-only runs have no time, hence no trace");
  const core::RunLimits limits{o.max_instructions,
                               parse_duration(o.max_sim_time, "--max-sim-time")};

  // Kernels from the kernel API are race-free by construction; program files are checked.
  const bool look_for_races = o.race_check && o.target.is_program_file();
  std::vector<RunOutcome> outcomes;
  for (const std::string& name : chips) {
    const arch::ChipSpec chip = arch::load_chip(name, overrides);
    profile::Trace trace;
    profile::Trace* tr = o.trace.empty() ? nullptr : &trace;
    if (o.cores || o.lnc) {
      const CorePrograms c = build_target_cores(o.target, chip, o.lnc, o.cores);
      outcomes.push_back(run_chip_programs(chip, c.programs, c.lnc, mode, o.seed, tr, limits));
      if (look_for_races) outcomes.back().races = core::check_races(c.programs.front(), chip);
    } else {
      const isa::Program program = build_target(o.target, chip);
      outcomes.push_back(run_program(chip, program, mode, o.seed, tr, limits));
      if (look_for_races) outcomes.back().races = core::check_races(program, chip);
    }
    if (!o.trace.empty()) {
      const std::string path = trace_path(o.trace, name, chips.size() > 1);
      if (window)
        write_trace(profile::window(trace, window->start, window->end), path);
      else
        write_trace(trace, path);
    }
    if (!outcomes.back().ok()) io.status = 1;
  }
  if (o.json) {
    RunOptions resolved = o;
    resolved.chips = chips;
    nlohmann::json runs = nlohmann::json::array();
    for (const RunOutcome& r : outcomes) runs.push_back(outcome_json(r));
    io.out << json_text({{"manifest", manifest(resolved, io)}, {"runs", runs}}) << "\n";
    return;
  }
  io.out << fmt::format("{} on {} ({}, seed {})\n", o.target.target, fmt::join(chips, ", "),
                        run_mode_name(mode), o.seed);
  if (outcomes.size() > 1) io.out << "\n" << format_comparison(outcomes);
  for (const RunOutcome& r : outcomes) io.out << "\n" << format_outcome(r);
  if (!o.trace.empty())
    for (const std::string& name : chips)
      io.out << "\ntrace: " << trace_path(o.trace, name, chips.size() > 1)
             << " (open in https://ui.perfetto.dev)\n";
}

}  // namespace

void setup_run_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand(
      "run", "run an example kernel or a text program on one NeuronCore: values, time, summary");
  sub->add_option("target", o->target.target,
                  "example kernel name (see --list) or a program file in the text form");
  sub->add_option("args", o->target.args,
                  "kernel arguments: integers in parameter order, or NAME=VALUE");
  sub->add_option("--chip", o->chips,
                  "generation(s) to run on (repeatable or comma-separated; default trn2)")
      ->delimiter(',');
  sub->add_option("--set", o->sets, "override a spec key: --set core.tensor.clock_ghz=3.0");
  sub->add_option("--mode", o->mode, "functional+timing (default), timing, or functional");
  sub->add_option("--trace", o->trace,
                  "write a trace to this file: Perfetto protobuf (.perfetto-trace, .pftrace) or "
                  "Chrome JSON (.json); ui.perfetto.dev opens both");
  sub->add_option("--trace-window", o->trace_window,
                  "trace only the spans that overlap START:END (ns, or with a unit: 2us:1.5ms; "
                  "either end may be left out), for runs too long to trace whole");
  sub->add_option("--seed", o->seed, "seed of the input values (uniform in [-1, 1))");
  sub->add_option("--lnc", o->lnc,
                  "run on the physical cores of one logical core (1 or 2; an SPMD kernel's "
                  "programs side by side, sharing the HBM stack); default: one core. With --cores: "
                  "physical cores per logical core (default: the chip's LNC for SPMD kernels, "
                  "else 1)");
  sub->add_option("--cores", o->cores,
                  "run on this many physical cores of the chip at once (1 .. chip.cores: 2 on "
                  "trn1, 8 on trn2 / trn3), in logical cores of --lnc, sharing the HBM stacks; "
                  "each logical core runs the kernel's programs (a copy per core with LNC=1)");
  sub->add_flag("--json", o->json, "the figures as JSON, with a manifest");
  sub->add_flag("!--no-race-check", o->race_check,
                "run a program file even without looking for races first (by default races "
                "and deadlocks the checker finds are reported as faults: exit 1)");
  sub->add_option("--max-instructions", o->max_instructions,
                  "executed instructions (each pass of a loop counts) before the run stops with "
                  "a step_limit fault")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 48));
  sub->add_option("--max-sim-time", o->max_sim_time,
                  "simulated time before the run stops with a time_limit fault (e.g. 500us, "
                  "2ms, 60s)")
      ->capture_default_str();
  sub->add_flag("--list", o->list, "list the example kernels and their parameters");
  sub->callback([o, &io] { run_kernel_job(*o, io); });
}

}  // namespace trnsim::cli
