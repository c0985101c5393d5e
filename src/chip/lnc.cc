#include "chip/lnc.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/error.h"

namespace trnsim::chip {

int cores_per_stack(const arch::ChipSpec& chip) {
  const int stacks = chip.chip.hbm.stacks.value_or(chip.chip.cores);
  return std::max(chip.chip.cores / std::max(stacks, 1), 1);
}

int lnc_degree(const arch::ChipSpec& chip, std::optional<int> requested, const char* what) {
  const arch::LncSpec& lnc = chip.chip.lnc;
  const int degree = requested.value_or(lnc.default_degree);
  if (std::find(lnc.degrees.begin(), lnc.degrees.end(), degree) == lnc.degrees.end())
    throw InputError(what, "chip.lnc.degrees",
                     fmt::format("LNC={}: {} has logical cores of {} physical core(s)", degree,
                                 chip.meta.name, fmt::join(lnc.degrees, " or ")));
  if (cores_per_stack(chip) % degree != 0)
    throw InputError(what, "chip.hbm.stacks",
                     fmt::format("LNC={}: {} has {} core(s) per HBM stack; the cores of a "
                                 "logical core must share one",
                                 degree, chip.meta.name, cores_per_stack(chip)));
  return degree;
}

}  // namespace trnsim::chip
