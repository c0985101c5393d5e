// Spec bindings: JSON documents cross the boundary as strings (the same documents as
// `trnsim spec --json`), so Python sees exactly what the CLI prints.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arch/arch.h"
#include "bindings/bindings.h"

namespace trnsim::bindings {

void bind_arch(nb::module_& m) {
  m.def(
      "chip_json",
      [](const std::string& name, const std::vector<std::string>& sets) {
        std::vector<arch::Override> overrides;
        for (const auto& s : sets) overrides.push_back(arch::parse_override(s));
        return arch::chip_to_json(arch::load_chip(name, overrides)).dump();
      },
      nb::arg("name"), nb::arg("overrides") = std::vector<std::string>{},
      "Resolved spec of a chip (name or what-if file) with `key=value` overrides, as JSON.");
  m.def(
      "compare_json",
      [](const std::vector<std::string>& names) { return arch::compare_json(names).dump(); },
      nb::arg("names"), "Generation-over-generation ratios to the first chip, as JSON.");
  m.def("list_chips", &arch::list_chips, "Names of the chips in the spec directory.");
  m.def(
      "schema_json", [] { return arch::schema_json().dump(); },
      "Every spec key with its type, unit, range and help, as JSON.");
}

}  // namespace trnsim::bindings
