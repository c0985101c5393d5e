#include "chip/spmd_run.h"

#include <fmt/format.h>

#include "base/error.h"
#include "chip/lnc.h"

namespace trnsim::chip {

namespace {

// `programs`, checked to fit one logical core: the cores of one HBM stack.
std::vector<const isa::Program*> one_logical_core(const arch::ChipSpec& chip,
                                                  std::vector<const isa::Program*> programs) {
  if (programs.empty()) throw InputError("spmd", "programs", "no program to run");
  if (static_cast<int>(programs.size()) > cores_per_stack(chip))
    throw InputError("spmd", "programs",
                     fmt::format("{} programs for a logical core of at most {} physical cores "
                                 "(the cores of one HBM stack on {})",
                                 programs.size(), cores_per_stack(chip), chip.meta.name));
  return programs;
}

}  // namespace

std::string spmd_summary(std::span<const core::TimingResult> cores, Picoseconds total) {
  return chip_summary(cores, total, 0);
}

SpmdRunner::SpmdRunner(const arch::ChipSpec& chip, std::vector<const isa::Program*> programs,
                       core::RunMode mode, core::RunLimits limits)
    : chip_(chip, one_logical_core(chip, programs), static_cast<int>(programs.size()), mode,
            limits) {}

}  // namespace trnsim::chip
