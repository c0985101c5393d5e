#include "core/timing/timing_run.h"

#include <optional>

#include "base/error.h"
#include "core/timing/core_timing.h"

namespace trnsim::core {

TimingResult run_timing(const arch::ChipSpec& chip, const isa::Program& program,
                        const TimingOptions& options) {
  sim::Simulator sim;
  HbmPool pool(hbm_stack_bandwidth(chip));  // the core alone on its stack
  CoreTiming core(chip, program, options, sim, pool);
  core.start();
  sim.run(options.max_time);
  if (!sim.idle()) core.stop_at_time_limit(options.max_time);
  return core.finish();
}

CoreRunner::CoreRunner(const arch::ChipSpec& chip, const isa::Program& program, RunMode mode,
                       RunLimits limits)
    : chip_(chip), program_(program), mode_(mode), limits_(limits) {
  if (mode_ != RunMode::kTimingOnly) {
    RunOptions run;
    run.max_instructions = limits.max_instructions;
    functional_ = std::make_unique<FunctionalRunner>(chip, program, run);
  }
}

CoreRunner::~CoreRunner() = default;

FunctionalRunner& CoreRunner::functional() {
  if (!functional_) throw InputError("a timing-only run has no data (HBM tensors)");
  return *functional_;
}

TimingResult CoreRunner::run(profile::Trace* trace) {
  if (mode_ == RunMode::kFunctionalOnly) {
    const RunResult fr = functional_->run();
    TimingResult r;
    r.instructions = fr.instructions;
    for (isa::Engine e : isa::kAllEngines)
      r.engines[static_cast<size_t>(e)].instructions = fr.per_engine[static_cast<size_t>(e)];
    for (const mem::Fault& f : functional_->faults()) r.faults.add(f);
    return r;
  }
  TimingOptions opts;
  opts.trace = trace;
  opts.max_instructions = limits_.max_instructions;
  opts.max_time = limits_.max_time;
  std::optional<TimedExecutor> exec;
  if (mode_ == RunMode::kFunctionalTiming) {
    exec.emplace(functional_->executor());
    opts.executor = &*exec;
  }
  const size_t before = functional_ ? functional_->faults().size() : 0;
  TimingResult r = run_timing(chip_, program_, opts);
  if (functional_)
    for (size_t i = before; i < functional_->faults().size(); ++i)
      r.faults.add(functional_->faults()[i]);
  return r;
}

}  // namespace trnsim::core
