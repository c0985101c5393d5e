// Shared SBUF/PSUM ports (HARDWARE.md s3): on NC-v2 Vector and GpSimd cannot access SBUF at
// once, nor Vector and Scalar PSUM; NC-v3 lifts both. Which instruction holds which port is
// data (timing_program.h: shared_ports from PortSpec); this class arbitrates: a port is held
// from issue until the holder's datapath is free (its ii), and requests are served first come,
// first served, so an engine issuing back-to-back cannot starve the other.
#pragma once

#include <array>
#include <cstdint>

#include "base/units.h"
#include "core/timing/timing_program.h"
#include "isa/engine.h"

namespace trnsim::core {

class SharedPorts {
 public:
  // Whether `engine` may take every port in `mask` at `now`. If not, it is queued on the
  // ports it waits for and `retry` is set to when it should look again (INT64_MAX: when woken).
  bool available(uint8_t mask, int engine, Picoseconds now, Picoseconds& retry);
  // Takes the ports in `mask` until `until`. Returns the engines queued behind `engine` on
  // them, to be woken at `until` (when the ports free).
  uint8_t acquire(uint8_t mask, int engine, Picoseconds until);
  // Drops `engine`'s place in every queue (it blocked on something else); returns the engines
  // that were behind it, to be woken now. Called at every blocked wait: empty queues (every
  // generation without port conflicts, and most of the time on NC-v2) return at once.
  uint8_t withdraw(int engine) {
    for (const Port& p : ports_)
      if (p.queue_len != 0) return withdraw_queued(engine);
    return 0;
  }

 private:
  uint8_t withdraw_queued(int engine);

  struct Port {
    Picoseconds busy_until{0};
    int owner = -1;
    uint8_t queue_len = 0;
    std::array<int8_t, isa::kNumEngines> queue{};  // FIFO of waiting engines
    bool queued(int e) const;
    void push(int e);
    void remove(int e);
  };
  std::array<Port, kNumSharedPorts> ports_{};
};

}  // namespace trnsim::core
