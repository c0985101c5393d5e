// One NeuronCore's timing model set up on a simulator it may share with other cores: its
// prepared program, context, five sequencers and DMA engines. run_timing() (timing_run.h)
// runs one alone; the chip layer (chip/spmd_run.h) runs the physical cores of a logical core
// side by side on one simulator, sharing an HBM stack's bandwidth (hbm_pool.h) and meeting at
// core_barrier and sendrecv (cross_core.h).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "arch/chip_spec.h"
#include "core/dma/dma_engines.h"
#include "core/dma/hbm_pool.h"
#include "core/timing/timing_context.h"
#include "core/timing/timing_path.h"
#include "core/timing/timing_program.h"
#include "core/timing/timing_run.h"
#include "core/timing/timing_sequencer.h"
#include "core/timing/timing_trace.h"
#include "sim/simulator.h"

namespace trnsim::core {

class CoreTiming {
 public:
  // `program`, `chip`, `sim`, `pool` and `cross` must outlive this object. `options.core_index`
  // names the trace's tracks; `rank` is the core's place in its group (cross_core.h).
  CoreTiming(const arch::ChipSpec& chip, const isa::Program& program, const TimingOptions& options,
             sim::Simulator& sim, HbmPool& pool, CrossCore* cross = nullptr, int rank = 0);
  CoreTiming(const CoreTiming&) = delete;
  CoreTiming& operator=(const CoreTiming&) = delete;

  // Lets every sequencer try to issue at time 0. Then run the simulator.
  void start();
  // After the simulator has run: reports streams left blocked (kDeadlock) and returns the
  // figures. Call once.
  TimingResult finish();
  // The simulator stopped at `limit` with events left: one kTimeLimit fault instead of the
  // deadlock report (the streams were not stuck, only out of time). Call before finish().
  void stop_at_time_limit(Picoseconds limit);

  TimingContext& context() { return ctx_; }
  DmaEngines& dma() { return *dma_; }

 private:
  void report_deadlock();

  const arch::ChipSpec& chip_;
  TimingProgram prog_;
  TimingContext ctx_;
  std::optional<TimingTrace> trace_;
  std::optional<TimingPath> path_;
  std::vector<std::unique_ptr<Sequencer>> seqs_;
  std::unique_ptr<DmaEngines> dma_;
};

// Bytes per second of one HBM stack of `chip` (chip.hbm.bandwidth_gbps / chip.hbm.stacks; one
// stack per core when the spec does not say).
uint64_t hbm_stack_bandwidth(const arch::ChipSpec& chip);

}  // namespace trnsim::core
