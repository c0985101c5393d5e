#pragma once

#include <nanobind/nanobind.h>

namespace nb = nanobind;

namespace trnsim::bindings {
void bind_numerics(nb::module_& m);
void bind_arch(nb::module_& m);
void bind_cli(nb::module_& m);
void bind_kernel(nb::module_& m);
void bind_kernel_builder(nb::module_& m);
void bind_run(nb::module_& m);
}  // namespace trnsim::bindings
