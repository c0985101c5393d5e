// Running the `trnsim` command in-process, as a user types it, for the CLI tests.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace trnsim::cli {

struct CliResult {
  int code;
  std::string out, err;
};

inline CliResult run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace trnsim::cli
