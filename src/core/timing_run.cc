#include "core/timing_run.h"

#include <fmt/format.h>

#include <optional>

#include "arch/derived.h"
#include "base/error.h"
#include "core/dma_engines.h"
#include "core/timing_sequencer.h"
#include "core/timing_trace.h"

namespace trnsim::core {

namespace {

constexpr double kFlopsPerTflop = 1e12;

double engine_clock(const arch::CoreSpec& s, isa::Engine e) {
  switch (e) {
    case isa::Engine::kTensor:
      return s.tensor.clock_ghz;
    case isa::Engine::kVector:
      return s.vector.clock_ghz;
    case isa::Engine::kScalar:
      return s.scalar.clock_ghz;
    case isa::Engine::kGpSimd:
      return s.gpsimd.clock_ghz;
    case isa::Engine::kSync:
      return s.sync.clock_ghz;
  }
  return s.sync.clock_ghz;
}

// One kDeadlock fault per stream left waiting on a semaphore that can no longer change.
void report_deadlock(TimingContext& ctx) {
  for (isa::Engine e : isa::kAllEngines) {
    const Sequencer& s = *ctx.seq[static_cast<size_t>(e)];
    if (s.finished()) continue;
    const isa::Instruction& ins = ctx.prog.stream(e)[s.pc()];
    const isa::SemWait* w = ctx.sems.first_unmet(std::span<const isa::SemWait>(ins.waits));
    ctx.fault(mem::FaultKind::kDeadlock, ins, e,
              ctx.result.engines[static_cast<size_t>(e)].instructions,
              w ? fmt::format("waits for semaphore {} >= {}, which stays at {}", w->sem, w->value,
                              ctx.sems.value(w->sem))
                : std::string("blocked at the end of the run"));
  }
}

// The functional runner's executor behind the timing model's interface.
class FunctionalExecutor : public InstructionExecutor {
 public:
  explicit FunctionalExecutor(Executor& exec) : exec_(exec) {}
  void execute(const isa::Instruction& ins, isa::Engine engine, uint64_t id) override {
    exec_.execute(ins, engine, id);
  }

 private:
  Executor& exec_;
};

}  // namespace

TimingResult run_timing(const arch::ChipSpec& chip, const isa::Program& program,
                        const TimingOptions& options) {
  const TimingProgram prog(program, chip.core);
  TimingContext ctx(chip, prog);
  ctx.executor = options.executor;
  ctx.max_instructions = options.max_instructions;
  std::optional<TimingTrace> trace;
  if (options.trace) {
    trace.emplace(*options.trace, prog, chip.core, options.core_index);
    ctx.trace = &*trace;
  }
  std::vector<std::unique_ptr<Sequencer>> seqs;
  for (isa::Engine e : isa::kAllEngines) {
    seqs.push_back(std::make_unique<Sequencer>(ctx, e, engine_clock(chip.core, e)));
    ctx.seq[static_cast<size_t>(e)] = seqs.back().get();
  }
  DmaEngines dma(ctx, options.fold_dma_engines);
  ctx.dma = &dma;
  for (auto& s : seqs) s->wake(Picoseconds(0));
  ctx.sim.run();

  TimingResult& r = ctx.result;
  if (!ctx.stopped) report_deadlock(ctx);
  r.events = ctx.sim.events_handled();
  r.total = r.dma.finish;
  for (const EngineStats& st : r.engines) r.total = std::max(r.total, st.finish);
  r.tensor_peak_flops = arch::derive(chip).at("core.tflops.bf16") * kFlopsPerTflop;
  return std::move(ctx.result);
}

CoreRunner::CoreRunner(const arch::ChipSpec& chip, const isa::Program& program, RunMode mode)
    : chip_(chip), program_(program), mode_(mode) {
  if (mode_ != RunMode::kTimingOnly)
    functional_ = std::make_unique<FunctionalRunner>(chip, program);
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
  std::optional<FunctionalExecutor> exec;
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
