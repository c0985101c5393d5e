// How much memory the host can give: the estimate that limits (kernel builds, input tensors,
// collective plans) check before they allocate, so an absurd size is an error and not an
// exhausted host.
#pragma once

#include <cstddef>

namespace trnsim {

// Bytes the host can allocate now without swapping: MemAvailable from /proc/meminfo (Linux),
// else physical pages times page size; 0 when nothing can tell.
size_t available_host_memory();

}  // namespace trnsim
