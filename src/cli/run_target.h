// What `trnsim run` runs: an example kernel by name (with its integer arguments) or a program
// in the text form (docs/isa.md), on one generation, in one of the three run modes. Kept apart
// from the option parsing so the default job and the tests reuse it.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "base/units.h"
#include "core/race/race_check.h"
#include "core/timing/timing_executor.h"
#include "core/timing/timing_result.h"
#include "core/timing/timing_run.h"
#include "isa/program.h"
#include "profile/trace.h"

namespace trnsim::cli {

// Parses "functional+timing" (also "ft", "default"), "timing" and "functional". Throws
// InputError naming --mode.
core::RunMode parse_run_mode(const std::string& s);
std::string run_mode_name(core::RunMode m);

// `trnsim run`'s default budget of executed instructions (--max-instructions): a billion, a few
// minutes of simulation at worst; Ctrl-C stops a run sooner.
inline constexpr uint64_t kDefaultMaxInstructions = 1'000'000'000;

// "500us", "2ms", "60s", "1500ns", "100000ps" (a number and a unit) as picoseconds. Throws
// InputError naming `option` for anything else, a value <= 0, or one past 100 days.
Picoseconds parse_duration(const std::string& text, const std::string& option);

// A kernel name from the registry, or a path to a program file (it exists, or contains '/'
// or ends in ".s"). `args`: integers in the kernel's parameter order, or NAME=VALUE pairs;
// a program takes none.
struct RunTarget {
  std::string target;
  std::vector<std::string> args;
  bool is_program_file() const;
};

// Builds (or assembles) the target's program for `chip`. A program file is also validated
// against the generation's rules, as `trnsim check` does (isa/validate.h). Throws InputError
// naming the kernel, argument, file or line.
isa::Program build_target(const RunTarget& t, const arch::ChipSpec& chip);
// An SPMD kernel's programs for the `cores` physical cores of a logical core (a program file
// runs as the same program on every core).
std::vector<isa::Program> build_target_spmd(const RunTarget& t, const arch::ChipSpec& chip,
                                            int cores);
// Whether the target is an SPMD kernel (one program per core of a logical core: matmul_lnc).
bool target_is_spmd(const RunTarget& t);
// The programs of a whole-chip run: `cores` physical cores in logical cores of `lnc`, each
// logical core running the target's SPMD programs for `lnc` cores (program id = the core's
// rank in its logical core, as the Neuron runtime loads one NEFF per logical core); a kernel
// that is not SPMD, or a program file, with lnc 1 runs one copy per core.
std::vector<isa::Program> build_target_chip(const RunTarget& t, const arch::ChipSpec& chip,
                                            int cores, int lnc);

// The programs of a run on several physical cores, as `trnsim run` and `trnsim profile` take
// the options: `cores` (--cores) physical cores (chip::physical_cores) in logical cores of
// `lnc` (--lnc; chip::chip_lnc, by default the chip's LNC for an SPMD kernel, else 1), or,
// without `cores`, the `lnc` cores of one logical core (chip::lnc_degree). Throws InputError
// naming the option (`lnc_what`, `cores_what`) and the spec key.
struct CorePrograms {
  std::vector<isa::Program> programs;  // program i runs on physical core i
  int lnc = 1;                         // physical cores per logical core
};
CorePrograms build_target_cores(const RunTarget& t, const arch::ChipSpec& chip,
                                std::optional<int> lnc, std::optional<int> cores,
                                const char* lnc_what = "--lnc", const char* cores_what = "--cores");

// Per output tensor: elements, finite min/max/mean, NaN and infinity counts (NaN shows reads
// of memory nothing wrote: SBUF and PSUM start as NaN).
struct TensorStats {
  std::string name;
  std::string dtype;
  int64_t elements = 0;
  int64_t nans = 0, infs = 0;
  double min = 0, max = 0, mean = 0;
};

struct RunOutcome {
  std::string chip;
  core::RunMode mode = core::RunMode::kFunctionalTiming;
  core::TimingResult result;         // instruction counts and faults only when functional
  std::vector<TensorStats> outputs;  // functional modes only
  // LNC and chip runs (run_chip_programs): each physical core's figures; `result` is core 0's
  // with the run's time (the slowest core), every core's instructions and faults.
  std::vector<core::TimingResult> cores;
  int lnc = 0;  // physical cores per logical core in those runs
  // Program files: what the race checker found before the run (none when not checked).
  std::optional<core::RaceReport> races;

  // No simulated fault and no race or deadlock finding.
  bool ok() const { return result.ok() && (!races || races->findings.empty() || !races->checked); }
};

// Runs `program` on `chip`: inputs are filled with values uniform in [-1, 1) drawn from the
// counter-based generator keyed by (seed, tensor index, element) and rounded to the tensor's
// dtype; `trace` (optional) receives the per-instruction spans in the timed modes.
RunOutcome run_program(const arch::ChipSpec& chip, const isa::Program& program, core::RunMode mode,
                       uint64_t seed, profile::Trace* trace, core::RunLimits limits = {});

// The same for the physical cores of one logical core (chip/spmd_run.h), program i on core i,
// sharing HBM; `trace` gets every core's tracks.
RunOutcome run_spmd_programs(const arch::ChipSpec& chip, const std::vector<isa::Program>& programs,
                             core::RunMode mode, uint64_t seed, profile::Trace* trace,
                             core::RunLimits limits = {});

// The same for `programs.size()` physical cores of a chip in logical cores of `lnc`
// (chip/chip_run.h): program i on core i, one HBM, each core on its HBM stack.
RunOutcome run_chip_programs(const arch::ChipSpec& chip, const std::vector<isa::Program>& programs,
                             int lnc, core::RunMode mode, uint64_t seed, profile::Trace* trace,
                             core::RunLimits limits = {});

// Text: the summary of TimingResult plus the output statistics; JSON: the same figures.
std::string format_outcome(const RunOutcome& o);
nlohmann::json outcome_json(const RunOutcome& o);

// A table with one column per chip (time, TensorE utilisation, busy %, HBM GB/s, faults).
std::string format_comparison(const std::vector<RunOutcome>& outcomes);

}  // namespace trnsim::cli
