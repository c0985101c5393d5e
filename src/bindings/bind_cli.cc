#include <nanobind/stl/vector.h>

#include <iostream>
#include <string>

#include "base/interrupt.h"
#include "bindings/bindings.h"
#include "cli/cli.h"

namespace trnsim::bindings {

void bind_cli(nb::module_& m) {
  m.def(
      "cli_main",
      [](const std::vector<nb::bytes>& raw) {
        // Arguments come as the bytes the OS gave (os.fsencode): a file name that is not UTF-8
        // stays the exact name instead of failing to convert.
        std::vector<std::string> args;
        args.reserve(raw.size());
        for (const nb::bytes& b : raw) args.emplace_back(b.c_str(), b.size());
        const SigintScope sigint(on_main_thread());
        const int rc = cli::run(args, std::cout, std::cerr);
        std::cout.flush();
        return rc;
      },
      nb::arg("args"),
      "Run the trnsim command line with `args` (bytes, no program name); returns the exit code. "
      "Ctrl-C during the call stops it with exit code 130.");
}

}  // namespace trnsim::bindings
