#pragma once

#include <nanobind/nanobind.h>

namespace nb = nanobind;

namespace trnsim::bindings {
// True on the interpreter's main thread, the one Python delivers SIGINT to: only there may a
// long call put a SigintScope (base/interrupt.h) around itself, so Ctrl-C stops the simulation
// (it arrives as KeyboardInterrupt); on other threads Python keeps its own handler.
bool on_main_thread();

void bind_numerics(nb::module_& m);
void bind_arch(nb::module_& m);
void bind_cli(nb::module_& m);
void bind_kernel(nb::module_& m);
void bind_kernel_builder(nb::module_& m);
void bind_run(nb::module_& m);
void bind_profile(nb::module_& m);
void bind_fabric(nb::module_& m);
void bind_model(nb::module_& m);
}  // namespace trnsim::bindings
