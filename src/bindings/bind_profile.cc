// Profile bindings: a program, or a target as `trnsim run` names it (an example kernel and its
// arguments, a text program file), profiled on one NeuronCore (core/timing/timing_profile.h);
// the profile comes back as JSON and as the text `trnsim profile` prints.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <string>
#include <tuple>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "bindings/bindings.h"
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

}  // namespace

void bind_profile(nb::module_& m) {
  m.def(
      "profile_program",
      [](const arch::ChipSpec& chip, const isa::Program* program, size_t top) {
        if (program == nullptr)  // None arrives as a null pointer
          throw InputError("profile", "program", "expected a Program, got None");
        return profiled(chip, *program, top);
      },
      nb::arg("chip"), nb::arg("program").none(), nb::arg("top") = 10,
      "Profiles `program` timing-only on one core: (JSON, text) of where each engine's time "
      "went, the bound, MFU / HFU, the roofline and the critical path (`top` instructions).");
  m.def(
      "profile_target",
      [](const std::string& target, const std::vector<std::string>& args,
         const std::string& chip_name, const std::vector<std::string>& sets, size_t top) {
        std::vector<arch::Override> overrides;
        for (const auto& s : sets) overrides.push_back(arch::parse_override(s));
        const arch::ChipSpec chip = arch::load_chip(chip_name, overrides);
        const isa::Program program = cli::build_target(cli::RunTarget{target, args}, chip);
        return profiled(chip, program, top);
      },
      nb::arg("target"), nb::arg("args"), nb::arg("chip"), nb::arg("sets"), nb::arg("top") = 10,
      "Profiles what `trnsim profile TARGET ARGS --chip CHIP --set ...` does: an example kernel "
      "by name with its arguments (integers or NAME=VALUE) or a text program file. Returns "
      "(JSON, text).");
}

}  // namespace trnsim::bindings
