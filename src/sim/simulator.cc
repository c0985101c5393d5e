#include "sim/simulator.h"

#include <utility>

#include "base/error.h"
#include "base/interrupt.h"

namespace trnsim::sim {

void Simulator::schedule(Picoseconds t, Component* target, uint32_t kind, uint64_t payload,
                         int32_t priority) {
  TRNSIM_ASSERT(target != nullptr);
  TRNSIM_ASSERT(t >= now_);  // causality: nothing is scheduled in the past
  Event e{t, priority, next_seq_++, target, kind, payload};
  const Later later;
  if (has_next_) {
    if (later(next_, e)) std::swap(next_, e);  // e runs first: it takes the slot
    queue_.push(e);
  } else if (queue_.empty() || later(queue_.top(), e)) {
    next_ = e;
    has_next_ = true;
  } else {
    queue_.push(e);
  }
}

void Simulator::run(Picoseconds limit) {
  while (!idle() && next_time() <= limit) {
    Event e;
    if (has_next_) {
      e = next_;
      has_next_ = false;
    } else {
      e = queue_.top();
      queue_.pop();
    }
    now_ = e.time;
    // Ctrl-C: one relaxed load per 1024 events keeps the stop well inside 100 ms.
    if ((++handled_ & 1023) == 0) check_interrupt();
    e.target->handle(e);
  }
}

}  // namespace trnsim::sim
