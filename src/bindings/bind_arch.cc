#include "bindings/bindings.h"

namespace trnsim::bindings {

void bind_arch(nb::module_&) {}

}  // namespace trnsim::bindings
