// Running a program on one NeuronCore with time (ARCHITECTURE.md: three run modes).
//  - run_timing(): the cycle-approximate model alone. Timing-only when no executor is given
//    (shapes without data: nothing is allocated for HBM or SBUF contents); functional + timing
//    when one is (values computed at each instruction's completion time).
//  - CoreRunner: the convenient form. It owns the functional runner's HBM and executor for the
//    modes that compute values (host tensor I/O through functional()), delegates
//    functional-only runs to FunctionalRunner, and times the others.
// Same program, spec and options give identical times, results and traces.
#pragma once

#include <cstdint>
#include <memory>

#include "arch/chip_spec.h"
#include "base/units.h"
#include "core/exec/functional_runner.h"
#include "core/timing/timing_executor.h"
#include "core/timing/timing_result.h"
#include "isa/program.h"
#include "profile/critical_path.h"
#include "profile/trace.h"

namespace trnsim::core {

// What a run may spend before it stops with a fault (a runaway program is a finding about the
// program, not an error of the simulator): executed instructions over all engines (each pass
// of a loop counts) and simulated time. The defaults are far beyond any kernel's needs; the
// CLI sets its own (--max-instructions, --max-sim-time).
inline constexpr Picoseconds kDefaultMaxSimTime{int64_t{3600} * 1'000'000'000'000};  // 1 hour
struct RunLimits {
  uint64_t max_instructions = uint64_t{1} << 32;
  Picoseconds max_time = kDefaultMaxSimTime;
};

struct TimingOptions {
  InstructionExecutor* executor = nullptr;  // null: timing only
  profile::Trace* trace = nullptr;          // null: no per-instruction trace
  // Null: no dependency graph. Else one node per executed instruction and transfer with what
  // released it (timing_path.h), for the critical path; no time changes.
  profile::DependencyGraph* path = nullptr;
  uint64_t max_instructions = uint64_t{1} << 40;  // a kStepLimit fault beyond this
  Picoseconds max_time{kDefaultMaxSimTime.v};     // simulated; a kTimeLimit fault beyond this
  int core_index = 0;                             // names the trace's tracks ("core0")
  // Simulate one DMA engine for all when the program's DMAs are symmetric (dma_engines.h);
  // false simulates each engine (same results, slower: for tests that check that).
  bool fold_dma_engines = true;
  // Record the signals of instructions retiring at a known time when they issue, instead of
  // applying them by a completion event (timing_semaphores.h); false: an event each (same
  // results, more events: for tests that check that).
  bool defer_signals = true;
};

TimingResult run_timing(const arch::ChipSpec& chip, const isa::Program& program,
                        const TimingOptions& options = {});

class CoreRunner {
 public:
  CoreRunner(const arch::ChipSpec& chip, const isa::Program& program,
             RunMode mode = RunMode::kFunctionalTiming, RunLimits limits = {});
  ~CoreRunner();

  RunMode mode() const { return mode_; }
  // HBM tensors and the executor's state, for the modes that compute values. Throws
  // InputError in timing-only mode (there is no data).
  FunctionalRunner& functional();

  // Runs the program once. Functional-only: the result carries instruction counts and faults,
  // no time.
  TimingResult run(profile::Trace* trace = nullptr);

 private:
  const arch::ChipSpec& chip_;
  const isa::Program& program_;
  RunMode mode_;
  RunLimits limits_;
  std::unique_ptr<FunctionalRunner> functional_;
};

}  // namespace trnsim::core
