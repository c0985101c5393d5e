// The extension module `trnsim._core`: marshalling only, no simulation logic. Each layer's
// bindings live in their own file and are registered here.
#include "base/error.h"
#include "base/interrupt.h"
#include "bindings/bindings.h"

namespace trnsim::bindings {
namespace {
unsigned long g_main_thread = 0;  // NOLINT: set once, when the module is imported
}  // namespace

bool on_main_thread() { return PyThread_get_thread_ident() == g_main_thread; }
}  // namespace trnsim::bindings

NB_MODULE(_core, m) {
  trnsim::bindings::g_main_thread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  m.doc() = "trnsim C++ core (use the `trnsim` package, not this module directly)";
  m.attr("__version__") = TRNSIM_VERSION;
  // C++ input errors arrive in Python as ValueError with the same message.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const trnsim::Interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const trnsim::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const trnsim::InternalError& e) {
      PyErr_SetString(PyExc_AssertionError, e.what());
    } catch (const trnsim::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  trnsim::bindings::bind_numerics(m);
  trnsim::bindings::bind_arch(m);
  trnsim::bindings::bind_cli(m);
  trnsim::bindings::bind_kernel(m);
  trnsim::bindings::bind_run(m);
  trnsim::bindings::bind_profile(m);
  trnsim::bindings::bind_fabric(m);
  trnsim::bindings::bind_model(m);
}
