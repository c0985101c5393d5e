// Profile bindings: a program, or a target as `trnsim run` names it (an example kernel and its
// arguments, a text program file), profiled on one NeuronCore (core/timing/timing_profile.h)
// or, with lnc / cores, on several (chip/chip_profile.h); the profile comes back as JSON and
// as the text `trnsim profile` prints.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "bindings/bindings.h"
#include "chip/chip_cores.h"
#include "chip/chip_profile.h"
#include "chip/chip_profile_report.h"
#include "chip/lnc.h"
#include "cli/run_target.h"
#include "core/timing/profile_report.h"
#include "core/timing/timing_profile.h"

namespace trnsim::bindings {

namespace {

// (JSON text, summary text) of a profile, the run with the GIL released (Ctrl-C stops it).
std::tuple<std::string, std::string> profiled(const arch::ChipSpec& chip,
                                              const isa::Program& program, size_t top) {
  core::ProfileOptions o;
  o.top = top;
  core::CoreProfile p;
  {
    const SigintScope sigint(on_main_thread());
    nb::gil_scoped_release release;
    p = core::profile_program(chip, program, o);
  }
  return {core::profile_json(p).dump(), core::profile_text(p)};
}

// The same for the programs of several physical cores (chip_profile_json / _text).
std::tuple<std::string, std::string> chip_profiled(const arch::ChipSpec& chip,
                                                   const cli::CorePrograms& c, size_t top) {
  core::ProfileOptions o;
  o.top = top;
  chip::ChipProfile p;
  {
    const SigintScope sigint(on_main_thread());
    nb::gil_scoped_release release;
    p = chip::profile_chip(chip, c.programs, c.lnc, o);
  }
  return {chip::chip_profile_json(p).dump(), chip::chip_profile_text(p)};
}

// A built program on several cores, as a program file runs there (cli::build_target_cores):
// a copy on every core, in logical cores of `lnc` (default 1 with `cores`).
cli::CorePrograms copies(const arch::ChipSpec& chip, const isa::Program& program,
                         std::optional<int> lnc, std::optional<int> cores) {
  cli::CorePrograms c;
  int n = 0;
  if (cores) {
    n = chip::physical_cores(chip, *cores, "cores");
    c.lnc = chip::chip_lnc(chip, n, lnc, 1, "lnc");
  } else {
    n = c.lnc = chip::lnc_degree(chip, lnc, "lnc");
  }
  c.programs.assign(static_cast<size_t>(n), program);
  return c;
}

}  // namespace

void bind_profile(nb::module_& m) {
  m.def(
      "profile_program",
      [](const arch::ChipSpec& chip, const isa::Program* program, size_t top,
         std::optional<int> lnc, std::optional<int> cores) {
        if (program == nullptr)  // None arrives as a null pointer
          throw InputError("profile", "program", "expected a Program, got None");
        if (lnc || cores) return chip_profiled(chip, copies(chip, *program, lnc, cores), top);
        return profiled(chip, *program, top);
      },
      nb::arg("chip"), nb::arg("program").none(), nb::arg("top") = 10, nb::arg("lnc") = nb::none(),
      nb::arg("cores") = nb::none(),
      "Profiles `program` timing-only on one core: (JSON, text) of where each engine's time "
      "went, the bound, MFU / HFU, the roofline and the critical path (`top` instructions). "
      "With `lnc` / `cores`, a copy runs on each of several cores (as a program file does with "
      "`trnsim profile --lnc / --cores`) and the JSON is {chip, cores}.");
  m.def(
      "profile_programs",
      [](const arch::ChipSpec& chip, const std::vector<const isa::Program*>& programs, int lnc,
         size_t top) {
        cli::CorePrograms c;
        c.lnc = lnc;
        for (const isa::Program* p : programs) {
          if (p == nullptr) throw InputError("profile", "programs", "expected Programs, got None");
          c.programs.push_back(*p);
        }
        if (c.programs.empty()) throw InputError("profile", "programs", "no program to profile");
        return chip_profiled(chip, c, top);
      },
      nb::arg("chip"), nb::arg("programs"), nb::arg("lnc"), nb::arg("top") = 10,
      "Profiles one program per physical core (an NKI kernel's instances on a logical core of "
      "`lnc` cores): (JSON {chip, cores}, text).");
  m.def(
      "profile_target",
      [](const std::string& target, const std::vector<std::string>& args,
         const std::string& chip_name, const std::vector<std::string>& sets, size_t top,
         std::optional<int> lnc, std::optional<int> cores) {
        std::vector<arch::Override> overrides;
        for (const auto& s : sets) overrides.push_back(arch::parse_override(s));
        const arch::ChipSpec chip = arch::load_chip(chip_name, overrides);
        const cli::RunTarget t{target, args};
        if (lnc || cores)
          return chip_profiled(chip, cli::build_target_cores(t, chip, lnc, cores, "lnc", "cores"),
                               top);
        const isa::Program program = cli::build_target(t, chip);
        return profiled(chip, program, top);
      },
      nb::arg("target"), nb::arg("args"), nb::arg("chip"), nb::arg("sets"), nb::arg("top") = 10,
      nb::arg("lnc") = nb::none(), nb::arg("cores") = nb::none(),
      "Profiles what `trnsim profile TARGET ARGS --chip CHIP --set ... [--lnc N] [--cores N]` "
      "does: an example kernel by name with its arguments (integers or NAME=VALUE) or a text "
      "program file. Returns (JSON, text); with `lnc` / `cores` the JSON is {chip, cores}.");
}

}  // namespace trnsim::bindings
