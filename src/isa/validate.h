// Static validation of a program against one generation's hardware rules (HARDWARE.md s2.1,
// s2.2, s3, s4): every instruction's engine, operands (spaces, partitions, free dims, bounds,
// dtypes), shapes, matmul limits, PSUM banks, generation features, DMA queues, semaphores and
// branches. Violations are returned as typed diagnostics, not thrown: the simulator reports
// them as faults. throw_if_any (diagnostic.h) turns the first into an InputError.
#pragma once

#include <vector>

#include "arch/chip_spec.h"
#include "arch/core_spec.h"
#include "isa/diagnostic.h"
#include "isa/program.h"

namespace trnsim::isa {

// `numerics` says which FP8 / MX formats TensorE takes and whether stochastic rounding exists.
std::vector<Diagnostic> validate(const Program& prog, const arch::CoreSpec& core,
                                 const arch::NumericsSpec& numerics);
// Also checks that every HBM tensor fits the chip's HBM (chip.hbm.capacity_gib).
std::vector<Diagnostic> validate(const Program& prog, const arch::ChipSpec& chip);

// The chip's HBM in bytes (all cores share it).
int64_t hbm_capacity_bytes(const arch::ChipSpec& chip);

}  // namespace trnsim::isa
