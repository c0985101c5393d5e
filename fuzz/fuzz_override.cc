// Fuzz target: `--set key=value` overrides. The input is split on NUL bytes; each piece goes
// through arch::parse_override and is applied to a copy of a loaded chip (the first byte picks
// which), and the whole list goes to the system and runtime loaders as the `collective` command
// passes it. An override that applies must leave the chip's derived figures finite.
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "arch/derived.h"
#include "fabric/runtime.h"
#include "fabric/system.h"
#include "fuzz_util.h"

namespace {

using namespace trnsim;

const arch::ChipSpec& base_chip(uint8_t pick) {
  static const std::array<arch::ChipSpec, 4> chips = {
      arch::load_chip("trn1"), arch::load_chip("trn2"), arch::load_chip("trn3"),
      arch::load_chip("trn4-projected")};
  return chips[pick % chips.size()];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0 || size > 4096) return -1;
  const std::vector<std::string> pieces = fuzz::split(fuzz::as_text(data + 1, size - 1), '\0');
  std::vector<arch::Override> overrides;
  fuzz::expect_clean("override", [&] {
    for (const auto& p : pieces) overrides.push_back(arch::parse_override(p));
  });
  if (overrides.size() != pieces.size()) return 0;

  fuzz::expect_clean("override", [&] {
    arch::ChipSpec chip = base_chip(data[0]);
    for (const auto& o : overrides) arch::apply_override(chip, o);
    (void)arch::chip_to_json(chip).dump();
    (void)arch::format_spec(chip);
    for (const auto& f : arch::derive(chip).figures)
      if (!std::isfinite(f.value))
        fuzz::finding("override", "accepted-invalid: a derived figure is not finite",
                      f.key + " = " + std::to_string(f.value) + " (" + f.how + ")");
  });
  // As `trnsim collective --set` splits them: launch.* and select.* are the runtime's.
  std::vector<arch::Override> sys, rt;
  for (const auto& o : overrides)
    (o.key.starts_with("launch.") || o.key.starts_with("select.") ? rt : sys).push_back(o);
  if (!rt.empty() || sys.empty())
    fuzz::expect_clean("override", [&] { (void)fabric::load_runtime("neuron-2023", rt); });
  if (!sys.empty()) {
    const char* systems[] = {"trn1.32xlarge", "trn2-ultraserver", "trn3-ultraserver-64"};
    fuzz::expect_clean("override", [&] { (void)fabric::load_system(systems[data[0] % 3], sys); });
  }
  return 0;
}
