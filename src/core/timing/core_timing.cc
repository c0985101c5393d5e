#include "core/timing/core_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "arch/derived.h"

namespace trnsim::core {

namespace {

constexpr double kFlopsPerTflop = 1e12;
constexpr double kBytesPerGB = 1e9;

}  // namespace

uint64_t hbm_stack_bandwidth(const arch::ChipSpec& chip) {
  const int stacks = std::max(chip.chip.hbm.stacks.value_or(chip.chip.cores), 1);
  const double bytes = chip.chip.hbm.bandwidth_gbps * kBytesPerGB / stacks;
  return static_cast<uint64_t>(std::max<long long>(std::llround(bytes), 1));
}

CoreTiming::CoreTiming(const arch::ChipSpec& chip, const isa::Program& program,
                       const TimingOptions& options, sim::Simulator& sim, HbmPool& pool,
                       CrossCore* cross, int rank)
    : chip_(chip), prog_(program, chip.core), ctx_(chip, prog_, sim) {
  ctx_.executor = options.executor;
  ctx_.result.spill = program.spill;
  ctx_.max_instructions = options.max_instructions;
  ctx_.defer_signals = options.defer_signals;
  ctx_.cross = cross;
  ctx_.core = rank;
  if (options.trace) {
    trace_.emplace(*options.trace, prog_, chip.core, options.core_index);
    ctx_.trace = &*trace_;
  }
  if (options.path) {
    path_.emplace(*options.path, prog_, cross != nullptr);
    ctx_.path = &*path_;
  }
  for (isa::Engine e : isa::kAllEngines) {
    seqs_.push_back(std::make_unique<Sequencer>(ctx_, e, engine_clock_ghz(chip.core, e)));
    ctx_.seq[static_cast<size_t>(e)] = seqs_.back().get();
  }
  dma_ = std::make_unique<DmaEngines>(ctx_, pool, options.fold_dma_engines);
  ctx_.dma = dma_.get();
}

void CoreTiming::start() {
  for (auto& s : seqs_) s->wake(Picoseconds(0));
}

// One kDeadlock fault per stream left waiting on a semaphore that can no longer change, or at
// a core_barrier the other cores never reached.
void CoreTiming::report_deadlock() {
  for (isa::Engine e : isa::kAllEngines) {
    const Sequencer& s = *ctx_.seq[static_cast<size_t>(e)];
    if (s.finished()) continue;
    if (s.at_barrier()) {
      ctx_.fault(mem::FaultKind::kDeadlock, prog_.stream(e)[s.barrier_index()], e, s.barrier_id(),
                 "waits at a core_barrier that another core of the logical core never reaches");
      continue;
    }
    const isa::Instruction& ins = prog_.stream(e)[s.pc()];
    const isa::SemWait* w =
        ctx_.sems.first_unmet(std::span<const isa::SemWait>(ins.waits), Semaphores::kNever);
    ctx_.fault(mem::FaultKind::kDeadlock, ins, e,
               ctx_.result.engines[static_cast<size_t>(e)].instructions,
               w ? fmt::format("waits for semaphore {} >= {}, which stays at {}", w->sem, w->value,
                               ctx_.sems.value(w->sem))
                 : std::string("blocked at the end of the run"));
  }
}

void CoreTiming::stop_at_time_limit(Picoseconds limit) {
  ctx_.stopped = true;
  mem::Fault f;
  f.kind = mem::FaultKind::kTimeLimit;
  f.message = fmt::format(
      "simulated time reached the run's limit of {} ps (--max-sim-time) with "
      "work left; an endless loop?",
      limit.v);
  ctx_.result.faults.add(std::move(f));
}

TimingResult CoreTiming::finish() {
  TimingResult& r = ctx_.result;
  if (trace_) trace_->finish();  // flows and counters, from what the run recorded
  if (!ctx_.stopped) report_deadlock();
  r.events = ctx_.sim.events_handled();
  r.total = r.dma.finish;
  for (const EngineStats& st : r.engines) r.total = std::max(r.total, st.finish);
  r.launch = Picoseconds(std::llround(chip_.core.launch.overhead_ns.value_or(0.0) * 1e3));
  r.tensor_peak_flops = arch::derive(chip_).at("core.tflops.bf16") * kFlopsPerTflop;
  return std::move(ctx_.result);
}

}  // namespace trnsim::core
