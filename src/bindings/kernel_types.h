// Shared by the kernel and run bindings.
#pragma once

#include "bindings/bindings.h"
#include "kernel/operands.h"

namespace trnsim::bindings {

// A per-partition scalar operand from Python: a float immediate or a [P, 1] View column.
kernel::Scalar scalar_of(nb::handle h);

}  // namespace trnsim::bindings
