// How many physical cores of a chip a run uses, and how they group into logical cores
// (HARDWARE.md s1, s6): the checks the CLI (`--cores`, `--lnc`) and Python make before a
// chip run (chip/chip_run.h), with errors that name the option and the spec key.
#pragma once

#include <optional>

#include "arch/chip_spec.h"

namespace trnsim::chip {

// `requested` physical cores, 1 .. chip.cores. Throws InputError naming `what` (e.g.
// "--cores") and chip.cores otherwise.
int physical_cores(const arch::ChipSpec& chip, int requested, const char* what = "cores");

// The LNC degree for a run of `cores` physical cores: `requested`, or `fallback` when none
// is given; checked against chip.lnc.degrees and the cores of an HBM stack (lnc_degree), and
// it must divide `cores`. Throws InputError naming `what` (e.g. "--lnc").
int chip_lnc(const arch::ChipSpec& chip, int cores, std::optional<int> requested, int fallback,
             const char* what = "lnc");

}  // namespace trnsim::chip
