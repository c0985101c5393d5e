// The core's semaphores (HARDWARE.md s2: hardware atomic semaphores; DRV: 256 per core) as the
// timing model sees them: counters checked when an instruction issues and changed when an
// instruction (or a DMA transfer) completes, plus which sequencers wait on each one so that a
// signal wakes exactly those. Waiters are a bit mask of engines: no allocation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "isa/instruction.h"

namespace trnsim::core {

class Semaphores {
 public:
  explicit Semaphores(int count) : value_(static_cast<size_t>(count)), waiters_(value_.size()) {}

  int64_t value(uint16_t sem) const { return value_.at(sem); }
  bool satisfied(const isa::SemWait& w) const { return value_.at(w.sem) >= w.value; }
  // The first wait of `waits` that does not hold, or nullptr.
  const isa::SemWait* first_unmet(std::span<const isa::SemWait> waits) const {
    for (const auto& w : waits)
      if (!satisfied(w)) return &w;
    return nullptr;
  }
  void add_waiter(uint16_t sem, int engine) { waiters_.at(sem) |= uint8_t(1u << engine); }
  // Applies a signal; returns the engines that waited on the semaphore (and forgets them: they
  // re-check their waits and re-register if still blocked).
  uint8_t signal(const isa::SemSignal& s) {
    value_.at(s.sem) += s.delta;
    const uint8_t w = waiters_[s.sem];
    waiters_[s.sem] = 0;
    return w;
  }
  size_t size() const { return value_.size(); }

 private:
  std::vector<int64_t> value_;
  std::vector<uint8_t> waiters_;
};

}  // namespace trnsim::core
