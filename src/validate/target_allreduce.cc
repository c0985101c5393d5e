// VALIDATION.md s4: nccom-test's 2-rank fp32 all-reduce on the two NeuronCores of one Trn1
// chip (2023), one record per size. Mechanism (docs/fabric.md): each core's collective DMA
// (3 CC-core-driven engines at 27.2 GB/s; reductions at half rate before near-memory
// accumulation) moves S/2 with a reduction then S/2 copied, 1.5 us per step and a handshake
// with the other core per step, behind the neuron-2023 runtime's 58 us launch cost of which
// 40 us overlap the data movement.
#include <fmt/format.h>

#include "fabric/collective.h"
#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

// The runtime's launch cost is the floor of the small sizes; its overlap with the data
// movement and the per-peer handshake were fitted on 4 MiB here and the 32-rank all-gather
// floor (spec/runtime/neuron-2023.toml). The other sizes check the model.
std::string fitted_by(int64_t bytes) {
  if (bytes <= 64 * kKiB) return "launch.launch_us (neuron-2023)";
  if (bytes == 4 * kMiB) return "launch.overlap_us, sync.peer_us (neuron-2023)";
  return "";
}

}  // namespace

std::vector<Record> allreduce_2rank_records() {
  std::vector<Record> out;
  for (const fabric::SweepCheck& c : fabric::allreduce_2rank_check()) {
    const std::string size = c.bytes >= kMiB ? fmt::format("{} MiB", c.bytes / kMiB)
                                             : fmt::format("{} KiB", c.bytes / kKiB);
    out.push_back({"allreduce-2rank", size, "us", c.measured_us, c.simulated_us, 0.15,
                   "VALIDATION.md s4 (NCCOM)",
                   "trn1.32xlarge, 2 ranks = the 2 NeuronCores of one chip, fp32, runtime "
                   "neuron-2023",
                   fitted_by(c.bytes)});
  }
  return out;
}

}  // namespace trnsim::validate
