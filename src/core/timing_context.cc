#include "core/timing_context.h"

#include "core/exec_context.h"
#include "core/timing_sequencer.h"

namespace trnsim::core {

void TimingContext::apply_signals(std::span<const isa::SemSignal> signals, Picoseconds now) {
  for (const isa::SemSignal& s : signals) {
    const uint8_t waiters = sems.signal(s);
    for (int e = 0; e < isa::kNumEngines; ++e)
      if (waiters & (1u << e)) seq[static_cast<size_t>(e)]->wake(now);
  }
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
