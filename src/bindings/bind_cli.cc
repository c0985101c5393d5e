#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <iostream>

#include "bindings/bindings.h"
#include "cli/cli.h"

namespace trnsim::bindings {

void bind_cli(nb::module_& m) {
  m.def(
      "cli_main",
      [](const std::vector<std::string>& args) {
        const int rc = cli::run(args, std::cout, std::cerr);
        std::cout.flush();
        return rc;
      },
      nb::arg("args"), "Run the trnsim command line with `args` (no program name); returns the exit code.");
}

}  // namespace trnsim::bindings
