// The discrete-event kernel. Components receive events addressed to them; events are ordered
// by (time, priority, sequence number), where the sequence number is the order of scheduling,
// so two runs with the same inputs handle the same events in the same order and produce
// bit-identical results and traces (SST activity ordering, STYLE.md 9).
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "base/units.h"

namespace trnsim::sim {

class Component;

struct Event {
  Picoseconds time;
  int32_t priority = 0;  // lower runs first at equal time
  uint64_t seq = 0;      // set by the simulator
  Component* target = nullptr;
  uint32_t kind = 0;     // meaning private to the target
  uint64_t payload = 0;  // meaning private to the target
};

class Component {
 public:
  virtual ~Component() = default;
  virtual void handle(const Event& e) = 0;
};

class Simulator {
 public:
  Picoseconds now() const { return now_; }
  uint64_t events_handled() const { return handled_; }
  bool idle() const { return !has_next_ && queue_.empty(); }
  // Time of the next pending event (INT64_MAX when none): lets a component that would only
  // schedule itself before anything else happens run on without an event.
  Picoseconds next_time() const {
    if (has_next_) return next_.time;
    return queue_.empty() ? Picoseconds(INT64_MAX) : queue_.top().time;
  }

  // Schedules an event at absolute time `t` (not before now()).
  void schedule(Picoseconds t, Component* target, uint32_t kind, uint64_t payload = 0,
                int32_t priority = 0);
  // Handles events until none is left, or until the next one is after `limit`.
  void run(Picoseconds limit = Picoseconds(INT64_MAX));

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.priority != b.priority) return a.priority > b.priority;
      return a.seq > b.seq;
    }
  };
  // The earliest pending event, when it was scheduled after everything in the heap ran out or
  // ahead of it: most events schedule the very next one (a completion wakes the engine that
  // waited for it), which then never enters the heap. Invariant: next_ runs before every event
  // of queue_. The order of handling is (time, priority, seq) either way.
  Event next_;
  bool has_next_ = false;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  Picoseconds now_{0};
  uint64_t next_seq_ = 0;
  uint64_t handled_ = 0;
};

}  // namespace trnsim::sim
