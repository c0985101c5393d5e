#pragma once

#include <nanobind/nanobind.h>

namespace nb = nanobind;

namespace trnsim::bindings {
void bind_numerics(nb::module_& m);
void bind_arch(nb::module_& m);
void bind_cli(nb::module_& m);
}  // namespace trnsim::bindings
