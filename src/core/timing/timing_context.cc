#include "core/timing/timing_context.h"

#include <algorithm>

#include "core/exec/exec_context.h"
#include "core/timing/timing_sequencer.h"

namespace trnsim::core {

namespace {
void wake(TimingContext& ctx, const SemWakes& w) {
  for (int e = 0; e < isa::kNumEngines; ++e)
    if (w.engines & (1u << e)) ctx.seq[static_cast<size_t>(e)]->wake(w.at[static_cast<size_t>(e)]);
}
}  // namespace

void TimingContext::apply_signals(std::span<const isa::SemSignal> signals, Picoseconds now) {
  SemWakes w;
  for (const isa::SemSignal& s : signals) sems.signal(s, now, w);
  wake(*this, w);
}

void TimingContext::defer(std::span<const isa::SemSignal> signals, Picoseconds t, Picoseconds now) {
  SemWakes w;
  for (const isa::SemSignal& s : signals) sems.defer(s, t, now, w);
  wake(*this, w);
}

void TimingContext::fault(mem::FaultKind kind, const isa::Instruction& ins, isa::Engine e,
                          uint64_t id, std::string message) {
  mem::Fault f;
  f.kind = kind;
  f.instruction_id = id;
  f.instruction = instruction_label(ins, e, id);
  f.message = std::move(message);
  result.faults.add(std::move(f));
}

}  // namespace trnsim::core
