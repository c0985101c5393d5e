// An independent check of a program's synchronisation, from the Program alone (it shares no
// code with the kernel API's dependency tracking): builds the happens-before graph that the
// semaphores imply and reports every pair of conflicting memory accesses (same bytes, at least
// one write) by different agents that it does not order, and every wait that can never hold.
//
// Model (the one kernel/sync_resolver.h documents):
//   - a stream issues in order; an instruction issues after its waits hold;
//   - an instruction's accesses happen between its issue and its completion;
//   - an engine completes its own (non-DMA) instructions in order, and two of them never race;
//     TensorE's load_stationary runs on a unit of its own and completes in order with the
//     other load_stationary instructions only (core/cost.h: the background unit);
//   - a DMA transfer starts when its trigger issues; transfers of one DMA queue agent
//     (trigger stream, dma_queue, partitions of the split side) complete in order;
//   - `semaphore s >= v` holds after the v-th signal of s; every semaphore must be signalled
//     by one agent only, so that the v-th signal is a known instruction.
#pragma once

#include <string>
#include <vector>

#include "isa/program.h"

namespace trnsim::kernel_test {

struct RaceReport {
  std::vector<std::string> problems;  // empty: race-free and deadlock-free
  size_t conflicting_pairs = 0;       // pairs of different agents that touch the same bytes
};

// Programs up to `max_instructions` (the check is quadratic in memory).
RaceReport check_races(const isa::Program& prog, size_t max_instructions = 12000);

}  // namespace trnsim::kernel_test
