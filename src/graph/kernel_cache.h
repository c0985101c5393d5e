// Kernel timing for the model compiler: each distinct kernel (Kernel::key) is simulated once
// per chip, timing only, on the cores that share one HBM stack (the other stacks' ranks are
// symmetric and contend only inside their own stack, chip/chip_run.h), and remembered; the
// layers of a model that compile to the same kernel cost one simulation.
//
// Tiling search: a linear has several legal tilings (ops::linear_tilings); each is timed on
// a probe of at most `probe_tokens` tokens and the fastest is kept for the whole kernel,
// as the Neuron compiler's autotuner picks a schedule by measuring (the choice is cached with
// the kernel, so a model's repeated shapes search once).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "arch/chip_spec.h"
#include "base/units.h"
#include "fabric/collective.h"
#include "graph/lower.h"
#include "graph/segment.h"

namespace trnsim::graph {

// The collective runtime (spec/runtime) of a compiled graph's all-reduces by default: a
// compiled graph's collectives synchronise on the device (semaphores between the ranks'
// cores, as neuron-2.28's handshakes model them), not through the host runtime calls that
// neuron-2023's per-peer handshakes were fitted on (nccom-test, VALIDATION.md s7).
inline constexpr std::string_view kInGraphRuntime = "neuron-2.28";

struct KernelTiming {
  Picoseconds time{0};        // the kernel on the chip (its slowest core), launch excluded
  int64_t hbm_bytes = 0;      // one rank's HBM reads + writes
  uint64_t instructions = 0;  // one rank's
  std::string bound;          // TimingResult::bound() verdict of one rank ("pe", "dma", ...)
  ops::LinearTiling tiling;   // linear kernels: the tiling chosen
  std::string algorithm;      // all-reduce: the collective algorithm
  int candidates = 0;         // tilings timed for it
  // Linear kernels: the time with its first weight blocks already in SBUF (prefetched by the
  // graph while earlier kernels ran); time - warm_time is what prefetch can hide at most.
  Picoseconds warm_time{0};
};

class KernelCache {
 public:
  // `tp` ranks of `lnc` physical cores each (the kernels are one physical core's shard); the
  // fabric times all-reduces among the ranks on `system` (in-graph collectives pay the data
  // movement, not a host launch: fabric::CollectiveResult::device).
  KernelCache(const arch::ChipSpec& chip, int tp, const fabric::SystemSpec* system, bool search,
              int lnc = 1, const std::string& runtime = std::string(kInGraphRuntime));

  const KernelTiming& time(const Kernel& k);
  // The tiling a linear kernel would use (searched if not yet); others: the default.
  ops::LinearTiling tiling(const Kernel& k);

  int distinct() const { return static_cast<int>(cache_.size()); }  // kernels timed
  int simulated() const { return simulated_; }  // simulations run, tiling probes included
  int hits() const { return hits_; }

  // Consecutive kernels emitted into one program (graph/segment.h), simulated once per
  // segment_key like a kernel: the segment's time on the chip, launch excluded. The items'
  // kernels carry their tilings. Null when the kernels cannot be built into one program (an
  // output that does not fit the input it feeds); InputError when the program faults.
  const KernelTiming* time_segment(const std::vector<SegmentItem>& items);
  // Segments built (those that could not be built included); their runs count in simulated().
  int segments() const { return static_cast<int>(segments_.size()); }

  // Also time each linear warm (KernelTiming::warm_time), for cross-kernel prefetch.
  void set_warm_timing(bool on) { warm_ = on; }

 private:
  KernelTiming simulate(const Kernel& k, const ops::LinearTiling* tiling);
  // One program on the ranks of one HBM stack; `what` and `detail` name it in errors.
  KernelTiming run_program(const isa::Program& p, const std::string& what,
                           const std::string& detail);
  ops::LinearTiling search(const Kernel& k);

  const arch::ChipSpec& chip_;
  int copies_;  // programs simulated together: the ranks of one HBM stack
  bool search_;
  bool warm_ = false;  // also time linears with their first weight blocks prefetched
  std::unique_ptr<fabric::Fabric> fabric_;
  std::map<std::string, KernelTiming> cache_;
  std::map<std::string, std::optional<KernelTiming>> segments_;
  std::map<std::string, ops::LinearTiling> tilings_;
  int simulated_ = 0, hits_ = 0;
};

}  // namespace trnsim::graph
