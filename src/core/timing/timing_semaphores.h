// The core's semaphores (HARDWARE.md s2: hardware atomic semaphores; DRV: 256 per core) as the
// timing model sees them: counters checked when an instruction issues and changed when an
// instruction (or a DMA transfer) completes, plus which sequencers wait on each one so that a
// signal wakes exactly those. Waiters are a bit mask of engines: no allocation.
//
// When no signal of the program lowers a counter (`monotone`: every delta >= 0, as the kernel
// API's programs are), a wait that holds keeps holding, so a blocked engine waits on exactly
// one semaphore, for one value, until signals bring that semaphore to the value: a signal
// that leaves it short does not wake the engine, whose issue attempt would only have found the
// same wait unmet and registered again (no other effect: a blocked engine holds no port claim,
// timing_ports.h). Issue times, and so every result, are those of waking it each time (issue
// attempts at equal time run in a fixed engine order, timing_context.h, so the attempts left
// out cannot reorder the others); only the discrete events are fewer. With a lowering signal
// anywhere, every signal wakes.
//
// Deferred signals (monotone counters only): an instruction's retirement time is known when it
// issues, so in timing-only runs its signals are recorded then, with that time, instead of
// being applied by an event of their own. A deferred signal counts from its time on: every
// check passes the time it is made at (`now`), and a waiter that deferred signals will satisfy
// is told when, at the time the completion event would have woken it. Completion events come
// before issue attempts at equal time (timing_context.h), and an issue attempt at `now` sees
// exactly the signals with time <= now, so every issue time is unchanged; only the events are
// fewer. A waiter stays registered until its wait holds, so an earlier (immediate or deferred)
// signal that satisfies it sooner still wakes it sooner.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "base/units.h"
#include "isa/instruction.h"

namespace trnsim::core {

// Engines to wake and when (each at most once: the earliest time reported for it).
struct SemWakes {
  uint8_t engines = 0;
  std::array<Picoseconds, isa::kNumEngines> at{};
  void add(int engine, Picoseconds t) {
    const auto e = static_cast<size_t>(engine);
    if (!(engines & (1u << e)) || t < at[e]) at[e] = t;
    engines |= uint8_t(1u << e);
  }
};

class Semaphores {
 public:
  static constexpr Picoseconds kNever{INT64_MAX};

  Semaphores(int count, bool monotone) : sems_(static_cast<size_t>(count)), monotone_(monotone) {}

  // Whether defer() may be used (monotone counters).
  bool defers() const { return monotone_; }
  // The counter with every signal applied, deferred ones included (at the end of a run).
  int64_t value(uint16_t sem) const {
    const Sem& s = sems_.at(sem);
    int64_t v = s.value;
    for (size_t i = s.head; i < s.pending.size(); ++i) v += s.pending[i].delta;
    return v;
  }
  bool satisfied(const isa::SemWait& w, Picoseconds now) {
    Sem& s = sems_.at(w.sem);
    if (s.head != s.pending.size()) fold(s, now);
    return s.value >= w.value;
  }
  // The first wait of `waits` that does not hold at `now`, or nullptr.
  const isa::SemWait* first_unmet(std::span<const isa::SemWait> waits, Picoseconds now) {
    for (const auto& w : waits)
      if (!satisfied(w, now)) return &w;
    return nullptr;
  }
  // `engine` is blocked at `now` on `w` (its first unmet wait). Returns when deferred signals
  // already recorded satisfy it (the caller wakes it then), or kNever (a signal will).
  Picoseconds add_waiter(const isa::SemWait& w, int engine, Picoseconds now) {
    leave(engine);
    Sem& s = sems_.at(w.sem);
    s.waiters |= uint8_t(1u << engine);
    need_[static_cast<size_t>(engine)] = w;
    blocked_ |= uint8_t(1u << engine);
    return monotone_ ? reach(s, w.value, now) : kNever;
  }
  // `engine` passed its waits: it no longer waits on anything.
  void leave(int engine) {
    if (!(blocked_ & (1u << engine))) return;
    blocked_ &= uint8_t(~(1u << engine));
    sems_[need_[static_cast<size_t>(engine)].sem].waiters &= uint8_t(~(1u << engine));
  }
  // Applies a signal at `now`; adds the engines to wake to `wakes`: every waiter on the
  // semaphore (forgotten: they re-check their waits and re-register if still blocked), or
  // with monotone counters those whose wait holds now or at a deferred signal's time.
  void signal(const isa::SemSignal& sig, Picoseconds now, SemWakes& wakes) {
    Sem& s = sems_.at(sig.sem);
    if (s.head != s.pending.size()) fold(s, now);
    s.value += sig.delta;
    if (!monotone_) {
      for (uint8_t left = s.waiters; left != 0; left &= uint8_t(left - 1)) {
        const int e = std::countr_zero(left);
        wakes.add(e, now);
        blocked_ &= uint8_t(~(1u << e));
      }
      s.waiters = 0;
      return;
    }
    wake_reached(s, now, wakes);
  }
  // Records a signal that applies at `t` (>= now; monotone counters only) and adds the
  // waiters it (with the others recorded) will satisfy to `wakes`.
  void defer(const isa::SemSignal& sig, Picoseconds t, Picoseconds now, SemWakes& wakes) {
    Sem& s = sems_.at(sig.sem);
    // Kept in time order; one engine's signals come in retirement order, so this is nearly
    // always an append.
    auto pos = s.pending.end();
    while (pos != s.pending.begin() + static_cast<std::ptrdiff_t>(s.head) && (pos - 1)->t > t)
      --pos;
    s.pending.insert(pos, {t, sig.delta});
    wake_reached(s, now, wakes);
  }
  size_t size() const { return sems_.size(); }

 private:
  struct Deferred {
    Picoseconds t;
    int64_t delta = 0;
  };
  struct Sem {
    int64_t value = 0;              // signals applied so far (deferred ones up to the last fold)
    uint8_t waiters = 0;            // engines blocked on this semaphore
    uint32_t head = 0;              // pending[head..] are still to apply
    std::vector<Deferred> pending;  // deferred signals, by time
  };

  // Applies the deferred signals with time <= now.
  static void fold(Sem& s, Picoseconds now) {
    while (s.head != s.pending.size() && s.pending[s.head].t <= now)
      s.value += s.pending[s.head++].delta;
    if (s.head == s.pending.size()) {
      s.pending.clear();
      s.head = 0;
    }
  }
  // When the counter reaches `need` counting the deferred signals (now if it has already).
  static Picoseconds reach(const Sem& s, int64_t need, Picoseconds now) {
    int64_t v = s.value;
    if (v >= need) return now;
    for (size_t i = s.head; i < s.pending.size(); ++i)
      if ((v += s.pending[i].delta) >= need) return std::max(s.pending[i].t, now);
    return kNever;
  }
  // Wakes the waiters on `s` whose wait holds now (forgotten) or at a deferred signal's time
  // (kept: an earlier signal may still come).
  void wake_reached(Sem& s, Picoseconds now, SemWakes& wakes) {
    for (uint8_t left = s.waiters; left != 0; left &= uint8_t(left - 1)) {
      const int e = std::countr_zero(left);
      const Picoseconds t = reach(s, need_[static_cast<size_t>(e)].value, now);
      if (t == kNever) continue;
      wakes.add(e, t);
      if (t <= now) {
        s.waiters &= uint8_t(~(1u << e));
        blocked_ &= uint8_t(~(1u << e));
      }
    }
  }

  std::vector<Sem> sems_;
  std::array<isa::SemWait, isa::kNumEngines> need_{};  // each blocked engine's wait
  uint8_t blocked_ = 0;                                // engines registered as waiters
  bool monotone_;
};

}  // namespace trnsim::core
