// Shared by the kernel and run bindings.
#pragma once

#include "bindings/bindings.h"
#include "kernel/operands.h"

namespace trnsim::bindings {

// A per-partition scalar operand from Python: a float immediate or a [P, 1] View column;
// anything else is a TypeError naming `what` (the parameter).
kernel::Scalar scalar_of(nb::handle h, const char* what);

}  // namespace trnsim::bindings
