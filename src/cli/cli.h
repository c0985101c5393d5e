// The `trnsim` command line as a library function, so the C++ executable, the Python entry
// point and the tests all run the same code. Never calls exit().
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace trnsim::cli {

// `args` excludes the program name. Returns the process exit code: 0 success, 1 a command's
// own failure, 2 bad input (unknown option, malformed spec file, ...).
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace trnsim::cli
