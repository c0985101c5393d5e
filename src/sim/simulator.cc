#include "sim/simulator.h"

#include "base/error.h"

namespace trnsim::sim {

void Simulator::schedule(Picoseconds t, Component* target, uint32_t kind, uint64_t payload,
                         int32_t priority) {
  TRNSIM_ASSERT(target != nullptr);
  TRNSIM_ASSERT(t >= now_);  // causality: nothing is scheduled in the past
  queue_.push(Event{t, priority, next_seq_++, target, kind, payload});
}

void Simulator::run(Picoseconds limit) {
  while (!queue_.empty() && queue_.top().time <= limit) {
    const Event e = queue_.top();
    queue_.pop();
    now_ = e.time;
    ++handled_;
    e.target->handle(e);
  }
}

}  // namespace trnsim::sim
