#include "cli/run_target.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>

#include "base/counter_rng.h"
#include "base/error.h"
#include "chip/chip_cores.h"
#include "chip/chip_run.h"
#include "chip/lnc.h"
#include "core/exec/functional_runner.h"
#include "core/timing/result_json.h"
#include "core/timing/timing_run.h"
#include "isa/assembler.h"
#include "isa/engine.h"
#include "isa/text_numbers.h"
#include "isa/validate.h"
#include "kernels/registry.h"
#include "numerics/format.h"

namespace trnsim::cli {

core::RunMode parse_run_mode(const std::string& s) {
  if (s == "functional+timing" || s == "ft" || s == "default")
    return core::RunMode::kFunctionalTiming;
  if (s == "timing") return core::RunMode::kTimingOnly;
  if (s == "functional") return core::RunMode::kFunctionalOnly;
  throw InputError("--mode", s, "expected functional+timing, timing or functional");
}

std::string run_mode_name(core::RunMode m) {
  switch (m) {
    case core::RunMode::kFunctionalTiming:
      return "functional+timing";
    case core::RunMode::kTimingOnly:
      return "timing";
    case core::RunMode::kFunctionalOnly:
      return "functional";
  }
  return "?";
}

Picoseconds parse_duration(const std::string& text, const std::string& option) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ps", 1.0}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}};
  constexpr double kMaxPs = 100.0 * 86400 * 1e12;  // 100 days: far below int64 picoseconds
  double value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  const std::string_view unit(end, static_cast<size_t>(last - end));
  for (const auto& [name, ps] : kUnits) {
    if (ec != std::errc() || unit != name) continue;
    const double total = value * ps;
    if (!(total >= 1.0) || !(total <= kMaxPs))
      throw InputError(option, text, "expected a duration from 1ps to 100 days");
    return Picoseconds(static_cast<int64_t>(total));
  }
  throw InputError(option, text, "expected a number and a unit: ps, ns, us, ms or s (e.g. 60s)");
}

bool RunTarget::is_program_file() const {
  namespace fs = std::filesystem;
  if (examples::find_kernel(target) != nullptr) return false;
  std::error_code ec;
  return fs::exists(target, ec) || target.find('/') != std::string::npos ||
         fs::path(target).extension() == ".s";
}

namespace {

// The text form's integer syntax (decimal or 0x hex); the error names the argument.
int64_t parse_int(const std::string& text, const std::string& where) {
  try {
    return isa::parse_integer<int64_t>(text);
  } catch (const InputError& e) {
    throw InputError(where, text, std::string("expected an integer: ") + e.what());
  }
}

// Positional integers fill parameters in order; NAME=VALUE sets one by name (after which
// positional arguments are not accepted, so the order stays unambiguous).
std::vector<int64_t> kernel_args(const examples::KernelEntry& k,
                                 const std::vector<std::string>& args) {
  std::vector<std::optional<int64_t>> set(k.params.size());
  size_t next = 0;
  bool named = false;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    const std::string where = fmt::format("run {}", k.name);
    if (eq == std::string::npos) {
      if (named) throw InputError(where, a, "positional argument after NAME=VALUE ones");
      if (next >= k.params.size())
        throw InputError(where, a, fmt::format("the kernel takes {} arguments", k.params.size()));
      set[next++] = parse_int(a, where);
      continue;
    }
    named = true;
    const std::string name = a.substr(0, eq);
    size_t i = 0;
    while (i < k.params.size() && k.params[i].name != name) ++i;
    if (i == k.params.size()) {
      std::string known;
      for (const auto& p : k.params)
        known += fmt::format("{}{}", known.empty() ? "" : ", ", p.name);
      throw InputError(where, name, "no such parameter; the kernel takes " + known);
    }
    set[i] = parse_int(a.substr(eq + 1), fmt::format("{} {}", where, name));
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < set.size(); ++i) out.push_back(set[i].value_or(k.params[i].default_value));
  return out;
}

TensorStats stats_of(const isa::HbmTensor& t, const std::vector<float>& v) {
  TensorStats s{t.name, t.dtype.name(), static_cast<int64_t>(v.size())};
  double sum = 0;
  int64_t finite = 0;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  for (float x : v) {
    if (std::isnan(x)) {
      ++s.nans;
    } else if (std::isinf(x)) {
      ++s.infs;
    } else {
      ++finite;
      sum += x;
      s.min = std::min(s.min, static_cast<double>(x));
      s.max = std::max(s.max, static_cast<double>(x));
    }
  }
  if (finite == 0) s.min = s.max = 0;
  s.mean = finite > 0 ? sum / static_cast<double>(finite) : 0.0;
  return s;
}

// In pieces of 1 Mi elements, so an input costs host memory close to its own size (the device
// HBM's copy) rather than three times it (a float copy and a converted copy besides).
template <class Runner>
void fill_inputs(Runner& fr, const isa::Program& program, uint64_t seed) {
  constexpr int64_t kPiece = int64_t{1} << 20;
  std::vector<float> v;
  for (size_t ti = 0; ti < program.tensors.size(); ++ti) {
    const isa::HbmTensor& t = program.tensors[ti];
    if (!t.is_input()) continue;
    for (int64_t first = 0; first < t.elements(); first += kPiece) {
      v.resize(static_cast<size_t>(std::min(kPiece, t.elements() - first)));
      for (size_t k = 0; k < v.size(); ++k) {
        // 24 random bits -> [-1, 1), exact in fp32.
        const uint32_t r = random_u32(seed, ti, static_cast<uint64_t>(first) + k) >> 8;
        v[k] = static_cast<float>(static_cast<double>(r) / double(1 << 23) - 1.0);
      }
      fr.write_tensor_f32_range(t.name, first, v);
    }
  }
}

template <class Runner>
std::vector<TensorStats> output_stats(const Runner& fr, const isa::Program& program) {
  std::vector<TensorStats> out;
  for (const isa::HbmTensor& t : program.tensors)
    if (t.is_output()) out.push_back(stats_of(t, fr.read_tensor_f32(t.name)));
  return out;
}

}  // namespace

isa::Program build_target(const RunTarget& t, const arch::ChipSpec& chip) {
  if (t.is_program_file()) {
    std::error_code ec;
    if (std::filesystem::is_directory(t.target, ec))
      throw InputError(t.target, "", "is a directory; expected a program file or a kernel name");
    if (!t.args.empty())
      throw InputError(t.target, t.args.front(), "a program file takes no arguments");
    isa::Program prog = isa::assemble_file(t.target);
    // The hardware rules `trnsim check` applies: a program that breaks them is not run.
    isa::throw_if_any(isa::validate(prog, chip), t.target);
    return prog;
  }
  const examples::KernelEntry* k = examples::find_kernel(t.target);
  if (k == nullptr) return examples::build_kernel(t.target, chip);  // throws, listing names
  return examples::build_kernel(t.target, chip, kernel_args(*k, t.args));
}

std::vector<isa::Program> build_target_spmd(const RunTarget& t, const arch::ChipSpec& chip,
                                            int cores) {
  if (t.is_program_file())
    return std::vector<isa::Program>(static_cast<size_t>(cores), build_target(t, chip));
  const examples::KernelEntry* k = examples::find_kernel(t.target);
  if (k == nullptr) return {examples::build_kernel(t.target, chip)};  // throws, listing names
  return examples::build_kernel_spmd(t.target, chip, kernel_args(*k, t.args), cores);
}

bool target_is_spmd(const RunTarget& t) {
  if (t.is_program_file()) return false;
  const examples::KernelEntry* k = examples::find_kernel(t.target);
  return k != nullptr && k->build_spmd;
}

std::vector<isa::Program> build_target_chip(const RunTarget& t, const arch::ChipSpec& chip,
                                            int cores, int lnc) {
  const std::vector<isa::Program> logical = build_target_spmd(t, chip, lnc);
  std::vector<isa::Program> programs;
  for (int c = 0; c < cores; ++c) programs.push_back(logical[static_cast<size_t>(c % lnc)]);
  return programs;
}

CorePrograms build_target_cores(const RunTarget& t, const arch::ChipSpec& chip,
                                std::optional<int> lnc, std::optional<int> cores,
                                const char* lnc_what, const char* cores_what) {
  if (cores) {
    // Kernels that split over a logical core default to the chip's LNC; others run a copy per
    // core (LNC=1).
    const int n = chip::physical_cores(chip, *cores, cores_what);
    const int degree = chip::chip_lnc(
        chip, n, lnc, target_is_spmd(t) ? chip.chip.lnc.default_degree : 1, lnc_what);
    return {build_target_chip(t, chip, n, degree), degree};
  }
  const int n = chip::lnc_degree(chip, lnc, lnc_what);
  return {build_target_spmd(t, chip, n), n};
}

RunOutcome run_spmd_programs(const arch::ChipSpec& chip, const std::vector<isa::Program>& programs,
                             core::RunMode mode, uint64_t seed, profile::Trace* trace,
                             core::RunLimits limits) {
  return run_chip_programs(chip, programs, static_cast<int>(programs.size()), mode, seed, trace,
                           limits);
}

RunOutcome run_chip_programs(const arch::ChipSpec& chip, const std::vector<isa::Program>& programs,
                             int lnc, core::RunMode mode, uint64_t seed, profile::Trace* trace,
                             core::RunLimits limits) {
  RunOutcome o;
  o.chip = chip.meta.name;
  o.mode = mode;
  o.lnc = lnc;
  std::vector<const isa::Program*> ptrs;
  for (const isa::Program& p : programs) ptrs.push_back(&p);
  chip::ChipRunner runner(chip, ptrs, lnc, mode, limits);
  if (mode != core::RunMode::kTimingOnly) fill_inputs(runner, programs.front(), seed);
  chip::ChipResult r = runner.run(mode == core::RunMode::kFunctionalOnly ? nullptr : trace);
  o.result = r.cores.front();
  o.result.total = r.total;
  o.result.instructions = r.instructions;
  o.result.faults = {};
  for (size_t c = 0; c < r.cores.size(); ++c)
    for (mem::Fault f : r.cores[c].faults) {
      f.instruction = fmt::format("core {} {}", c, f.instruction);
      o.result.faults.add(std::move(f));
    }
  o.cores = std::move(r.cores);
  if (mode != core::RunMode::kTimingOnly) o.outputs = output_stats(runner, programs.front());
  return o;
}

RunOutcome run_program(const arch::ChipSpec& chip, const isa::Program& program, core::RunMode mode,
                       uint64_t seed, profile::Trace* trace, core::RunLimits limits) {
  RunOutcome o;
  o.chip = chip.meta.name;
  o.mode = mode;
  core::CoreRunner runner(chip, program, mode, limits);
  if (mode != core::RunMode::kTimingOnly) fill_inputs(runner.functional(), program, seed);
  o.result = runner.run(mode == core::RunMode::kFunctionalOnly ? nullptr : trace);
  if (mode != core::RunMode::kTimingOnly) o.outputs = output_stats(runner.functional(), program);
  return o;
}

std::string format_outcome(const RunOutcome& o) {
  std::string s = fmt::format("== {} ({})\n", o.chip, run_mode_name(o.mode));
  if (o.races && !o.races->checked) {
    s += fmt::format("race check skipped: {} (trnsim check --max-instructions N checks more)\n",
                     o.races->findings.empty() ? std::string("too big")
                                               : core::format_finding(o.races->findings[0]));
  } else if (o.races && !o.races->findings.empty()) {
    // The values of a racy program depend on an order the hardware does not promise.
    s += fmt::format(
        "race check: {} finding(s); the outputs below depend on the order the "
        "hardware happens to pick:\n",
        o.races->findings.size());
    for (const core::Finding& f : o.races->findings) s += "  " + core::format_finding(f) + "\n";
  }
  s += o.cores.empty() ? o.result.summary() : chip::chip_summary(o.cores, o.result.total, o.lnc);
  if (!o.outputs.empty()) {
    s += "outputs:\n";
    for (const TensorStats& t : o.outputs)
      s += fmt::format(
          "  {:<12} {:<6} {:>10} elements  min {:.6g}  max {:.6g}  mean {:.6g}{}\n", t.name,
          t.dtype, t.elements, t.min, t.max, t.mean,
          t.nans + t.infs == 0 ? std::string() : fmt::format("  NaN {}  inf {}", t.nans, t.infs));
  }
  return s;
}

nlohmann::json outcome_json(const RunOutcome& o) {
  nlohmann::json j{{"chip", o.chip},
                   {"mode", run_mode_name(o.mode)},
                   {"result", core::timing_result_json(o.result)}};
  if (!o.cores.empty()) {
    nlohmann::json cores = nlohmann::json::array();
    for (const core::TimingResult& r : o.cores) cores.push_back(core::timing_result_json(r));
    j["lnc"] = o.lnc;
    j["physical_cores"] = o.cores.size();
    j["cores"] = cores;
  }
  nlohmann::json outs = nlohmann::json::array();
  for (const TensorStats& t : o.outputs)
    outs.push_back({{"name", t.name},
                    {"dtype", t.dtype},
                    {"elements", t.elements},
                    {"min", t.min},
                    {"max", t.max},
                    {"mean", t.mean},
                    {"nans", t.nans},
                    {"infs", t.infs}});
  j["outputs"] = outs;
  if (o.races) j["races"] = core::race_report_json(*o.races);
  return j;
}

std::string format_comparison(const std::vector<RunOutcome>& outcomes) {
  std::string s = fmt::format("{:<28}", "");
  for (const RunOutcome& o : outcomes) s += fmt::format("{:>14}", o.chip);
  s += "\n";
  auto row = [&](const std::string& name, auto&& cell) {
    s += fmt::format("{:<28}", name);
    for (const RunOutcome& o : outcomes) s += fmt::format("{:>14}", cell(o));
    s += "\n";
  };
  row("time (us)", [](const RunOutcome& o) {
    return fmt::format("{:.3f}", static_cast<double>(o.result.total.v) * 1e-6);
  });
  // "-" where the chip's spec models no launch cost (core.launch.overhead_ns absent).
  row("latency with launch (us)", [](const RunOutcome& o) {
    return o.result.launch.v == 0
               ? std::string("-")
               : fmt::format("{:.3f}", static_cast<double>(o.result.latency().v) * 1e-6);
  });
  row("TensorE utilisation (%)", [](const RunOutcome& o) {
    return fmt::format("{:.2f}", 100.0 * o.result.tensor_utilisation());
  });
  row("TensorE peak (TFLOPS bf16)", [](const RunOutcome& o) {
    return fmt::format("{:.2f}", o.result.tensor_peak_flops * 1e-12);
  });
  for (isa::Engine e : isa::kAllEngines)
    row(fmt::format("{} busy (%)", isa::engine_name(e)),
        [e](const RunOutcome& o) { return fmt::format("{:.2f}", o.result.busy_percent(e)); });
  row("HBM (GB/s)", [](const RunOutcome& o) { return fmt::format("{:.1f}", o.result.hbm_gbps()); });
  row("instructions", [](const RunOutcome& o) { return fmt::format("{}", o.result.instructions); });
  row("faults", [](const RunOutcome& o) { return fmt::format("{}", o.result.faults.size()); });
  if (outcomes.size() > 1 && !outcomes.front().outputs.empty()) {
    // Bit-level agreement is not expected across generations (rounding differs); show means.
    for (size_t i = 0; i < outcomes.front().outputs.size(); ++i)
      row(fmt::format("{} mean", outcomes.front().outputs[i].name), [i](const RunOutcome& o) {
        return i < o.outputs.size() ? fmt::format("{:.6g}", o.outputs[i].mean) : std::string("-");
      });
  }
  return s;
}

}  // namespace trnsim::cli
