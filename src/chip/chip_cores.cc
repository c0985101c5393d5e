#include "chip/chip_cores.h"

#include <fmt/format.h>

#include "base/error.h"
#include "chip/lnc.h"

namespace trnsim::chip {

int physical_cores(const arch::ChipSpec& chip, int requested, const char* what) {
  if (requested < 1 || requested > chip.chip.cores)
    throw InputError(what, "chip.cores",
                     fmt::format("{} cores: {} has {} physical cores (1 .. {})", requested,
                                 chip.meta.name, chip.chip.cores, chip.chip.cores));
  return requested;
}

int chip_lnc(const arch::ChipSpec& chip, int cores, std::optional<int> requested, int fallback,
             const char* what) {
  const int lnc = lnc_degree(chip, requested.value_or(fallback), what);
  if (cores % lnc != 0)
    throw InputError(what, "chip.lnc.degrees",
                     fmt::format("LNC={} does not divide {} cores into logical cores", lnc, cores));
  return lnc;
}

}  // namespace trnsim::chip
