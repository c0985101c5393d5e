// The core's semaphores (HARDWARE.md s2: hardware atomic semaphores; DRV: 256 per core) as the
// timing model sees them: counters checked when an instruction issues and changed when an
// instruction (or a DMA transfer) completes, plus which sequencers wait on each one so that a
// signal wakes exactly those. Waiters are a bit mask of engines: no allocation.
//
// When no signal of the program lowers a counter (`monotone`: every delta >= 0, as the kernel
// API's programs are), a wait that holds keeps holding, so a blocked engine waits on exactly
// one semaphore, for one value, until a signal brings that semaphore to the value: a signal
// that leaves it short does not wake the engine, whose issue attempt would only have found the
// same wait unmet and registered again (no other effect: a blocked engine holds no port claim,
// timing_ports.h). Issue times, and so every result, are those of waking it each time (issue
// attempts at equal time run in a fixed engine order, timing_context.h, so the attempts left
// out cannot reorder the others); only the discrete events are fewer. With a lowering signal
// anywhere, every signal wakes.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "isa/instruction.h"

namespace trnsim::core {

class Semaphores {
 public:
  Semaphores(int count, bool monotone)
      : value_(static_cast<size_t>(count)), waiters_(value_.size()), monotone_(monotone) {}

  int64_t value(uint16_t sem) const { return value_.at(sem); }
  bool satisfied(const isa::SemWait& w) const { return value_.at(w.sem) >= w.value; }
  // The first wait of `waits` that does not hold, or nullptr.
  const isa::SemWait* first_unmet(std::span<const isa::SemWait> waits) const {
    for (const auto& w : waits)
      if (!satisfied(w)) return &w;
    return nullptr;
  }
  // `engine` is blocked on `w` (its first unmet wait).
  void add_waiter(const isa::SemWait& w, int engine) {
    waiters_.at(w.sem) |= uint8_t(1u << engine);
    need_[static_cast<size_t>(engine)] = w;
  }
  // Applies a signal; returns the engines to wake (and forgets them: they re-check their waits
  // and re-register if still blocked): every waiter on the semaphore, or with monotone
  // counters those whose wait it satisfies.
  uint8_t signal(const isa::SemSignal& s) {
    const int64_t v = value_.at(s.sem) += s.delta;
    const uint8_t w = waiters_[s.sem];
    uint8_t wake = w;
    if (monotone_)
      for (uint8_t left = w; left != 0; left &= uint8_t(left - 1)) {
        const auto e = static_cast<size_t>(std::countr_zero(left));
        if (need_[e].sem == s.sem && v < need_[e].value) wake &= uint8_t(~(1u << e));
      }
    waiters_[s.sem] = uint8_t(w & ~wake);
    return wake;
  }
  size_t size() const { return value_.size(); }

 private:
  std::vector<int64_t> value_;
  std::vector<uint8_t> waiters_;
  std::array<isa::SemWait, isa::kNumEngines> need_{};  // each engine's blocking wait
  bool monotone_;
};

}  // namespace trnsim::core
