// Logical NeuronCores (HARDWARE.md s6): LNC=2 groups two physical cores that share one HBM
// stack into one logical core (Trn2/Trn3 default); LNC=1 makes every physical core its own.
// The degrees a chip allows and its default are spec data (chip.lnc.*).
#pragma once

#include <optional>

#include "arch/chip_spec.h"

namespace trnsim::chip {

// Physical cores per HBM stack (chip.cores / chip.hbm.stacks; 1 when stacks are not given).
int cores_per_stack(const arch::ChipSpec& chip);

// The LNC degree to run with: `requested`, or the chip's default. Throws InputError naming
// `what` (e.g. "--lnc") when the chip does not allow it (chip.lnc.degrees) or when the cores of
// one logical core would not share an HBM stack.
int lnc_degree(const arch::ChipSpec& chip, std::optional<int> requested, const char* what = "lnc");

}  // namespace trnsim::chip
