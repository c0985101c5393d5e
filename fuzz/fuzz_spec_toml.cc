// Fuzz target: one TOML file through every loader of data files: a chip spec (arch::load_chip,
// what-if files with `[meta] inherits`), a system (fabric::load_system) and a collective
// runtime (fabric::load_runtime). The loaders take paths, so the input is written to a scratch
// file first. A chip that loads is also reported (JSON, text) and its derived figures must be
// finite: a value the loader accepts must not make the figures computed from it meaningless.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "arch/arch.h"
#include "arch/derived.h"
#include "fabric/runtime.h"
#include "fabric/system.h"
#include "fuzz_util.h"

namespace {

using namespace trnsim;

void check_chip(const arch::ChipSpec& chip, std::string_view surface) {
  (void)arch::chip_to_json(chip).dump();
  (void)arch::format_spec(chip);
  for (const auto& f : arch::derive(chip).figures)
    if (!std::isfinite(f.value))
      fuzz::finding(surface, "accepted-invalid: a derived figure is not finite",
                    f.key + " = " + std::to_string(f.value) + " (" + f.how + ")");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 65536) return -1;  // the largest spec file is ~30 KB
  const std::string path = fuzz::scratch_file("fuzz.toml", fuzz::as_text(data, size)).string();
  fuzz::expect_clean("chip loader", [&] { check_chip(arch::load_chip(path), "chip loader"); });
  fuzz::expect_clean("system loader", [&] {
    const fabric::SystemSpec s = fabric::load_system(path);
    check_chip(s.chip, "system loader");
  });
  fuzz::expect_clean("runtime loader", [&] { (void)fabric::load_runtime(path); });
  return 0;
}
