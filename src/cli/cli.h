// The `trnsim` command line as a library function, so the C++ executable, the Python entry
// point and the tests all run the same code. Never calls exit().
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace trnsim::cli {

// Exit codes of the command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;       // the run, check or validation found faults
inline constexpr int kExitBadInput = 2;       // unknown option, malformed file, value out of range
inline constexpr int kExitInternal = 3;       // a broken invariant of trnsim (a bug)
inline constexpr int kExitInterrupted = 130;  // SIGINT, as shells report it (128 + 2)

// `args` excludes the program name. Returns the process exit code (above). Every exception is
// caught here and reported on `err` as "trnsim: error: ..." (or "trnsim: interrupted", or
// "trnsim: internal error: ..."). Ctrl-C reaches a run through base/interrupt.h: the caller
// installs a SigintScope around the call.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The commit this build was configured at (`git rev-parse --short=12 HEAD`), or "unknown".
const char* commit();

}  // namespace trnsim::cli
