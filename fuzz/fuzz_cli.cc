// Fuzz target: the `trnsim` command line (cli::run) with string streams. The input is the
// argument vector, split on NUL bytes; after a byte 0x01, the rest is the content of a scratch
// file that the arguments `@s` (a program, scratch.s) and `@toml` (a chip or system file,
// scratch.toml) name. Exit codes 0, 1 and 2 with a message are clean outcomes; an escaping
// exception, an abort or a sanitizer report is a finding.
//
// Arguments that would only cost time or touch the file system are skipped, not run: no
// subcommand (the default job is a full matmul on three chips), `validate` (every calibration
// case), `--trace` (writes files), numbers of four digits or more in `run` and `collective` (a
// sweep of that size runs for seconds; the parsing is the same at small sizes), `collective`
// without `--sizes` (its default sweep, 1 KiB to 1 GiB, of 55 ranks takes 2.4 s, 80 s under
// the sanitizers: a campaign reported it as a timeout), and `run` of an
// example kernel (their default sizes run for seconds), of a program with a `branch` (a loop
// may run 2^32 instructions before the step limit) or other than `--mode timing` (the values
// are not a parsing surface).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli.h"
#include "fuzz_util.h"
#include "kernels/registry.h"

namespace {

using namespace trnsim;

bool has_big_number(std::string_view a) {
  int digits = 0;
  for (char c : a) {
    digits = c >= '0' && c <= '9' ? digits + 1 : 0;
    if (digits >= 4) return true;
  }
  return false;
}

bool too_costly(const std::vector<std::string>& args, std::string_view file) {
  if (args.empty()) return true;
  const std::string& cmd = args[0];
  if (cmd != "spec" && cmd != "check" && cmd != "run" && cmd != "collective" && cmd != "isa")
    return true;
  bool timing = false, listing = false, sizes = false;
  for (const std::string& a : args) {
    sizes = sizes || a.starts_with("--sizes");
    if (a.starts_with("--tr")) return true;
    if ((cmd == "run" || cmd == "collective") && has_big_number(a)) return true;
    if (cmd == "run" && examples::find_kernel(a) != nullptr) return true;
    timing = timing || a == "timing" || a == "--mode=timing";
    listing = listing || a == "--list" || a == "--help" || a == "-h";
  }
  if (cmd == "run" && !listing && (!timing || file.find("branch") != std::string_view::npos))
    return true;
  if (cmd == "collective" && !listing && !sizes) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return -1;
  std::string_view text = fuzz::as_text(data, size);
  std::string_view file;
  if (const size_t soh = text.find('\x01'); soh != std::string_view::npos) {
    file = text.substr(soh + 1);
    text = text.substr(0, soh);
  }
  std::vector<std::string> args = fuzz::split(text, '\0');
  if (too_costly(args, file)) return -1;
  for (std::string& a : args) {
    if (a == "@s") a = fuzz::scratch_file("scratch.s", file).string();
    if (a == "@toml") a = fuzz::scratch_file("scratch.toml", file).string();
  }
  fuzz::expect_clean("cli", [&] {
    std::ostringstream out, err;
    const int code = cli::run(args, out, err);
    // cli.h promises 0, 1 or 2: CLI11's own parse-error codes (103..114) are mapped to 2.
    if (code < 0 || code > 2)
      fuzz::finding("cli", "exit code outside 0..2", std::to_string(code) + "\n" + err.str());
  });
  return 0;
}
