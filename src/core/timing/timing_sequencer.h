// One engine's sequencer (HARDWARE.md s2): its own clock, its own in-order instruction stream,
// scalar registers for loops. At each of its clock edges it issues the next instruction when
//  - the unit the instruction runs on is free (back-to-back independent instructions are
//    pipelined at their initiation interval, cost.h), and at most one instruction issues per
//    cycle;
//  - every semaphore wait holds (checked at issue; signals apply at completion);
//  - the shared SBUF/PSUM ports it needs are free (timing_ports.h).
// Instructions retire in order: an instruction's values (executor) and semaphore signals take
// effect at its completion or at the previous instruction's retirement, whichever is later.
// A core_barrier holds the stream until the other cores of the logical core reach theirs
// (cross_core.h); a sendrecv is handed to the group like a DMA to the DMA engines.
// The five engines differ only in data (clock, costs, units), so one class serves them all.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>

#include "core/control/register_file.h"
#include "core/timing/timing_clock.h"
#include "core/timing/timing_context.h"
#include "sim/clock.h"

namespace trnsim::core {

class Sequencer : public sim::Component {
 public:
  Sequencer(TimingContext& ctx, isa::Engine engine, double clock_ghz);

  // Schedules an issue attempt at the first clock edge at or after `t`.
  void wake(Picoseconds t);
  void handle(const sim::Event& e) override;

  bool finished() const { return pc_ >= stream_.size() && !at_barrier_; }
  // Waiting at a core_barrier for the other cores; barrier_index() is its place in the stream.
  bool at_barrier() const { return at_barrier_; }
  size_t barrier_index() const { return barrier_index_; }
  uint64_t barrier_id() const { return barrier_id_; }
  // The group lets this stream past its core_barrier at `t` (cross_core.h).
  void release_barrier(Picoseconds t);
  isa::Engine engine() const { return engine_; }
  size_t pc() const { return pc_; }
  const sim::Clock& clock() const { return clock_.clock(); }

 private:
  enum Kind : uint32_t { kTry = 0, kComplete = 1, kRelease = 2 };

  void try_issue();
  void issue(const isa::Instruction& ins, const InstrInfo& info, uint64_t cycle);
  // Resolves a control instruction; returns the next pc (or the current one after a fault).
  size_t run_control(const isa::Instruction& ins, uint64_t id);
  // The instruction `ins` stands for once its registers are read, or null after a fault.
  const isa::Instruction* resolve(const isa::Instruction& ins, const InstrInfo& info, uint64_t id);
  void complete(uint64_t payload);
  void released(Picoseconds now);
  void schedule_try(Picoseconds t);
  // The records were written by the preparation pass, long evicted by the time the stream
  // reaches them: fetch a few instructions ahead (every line a record straddles).
  void prefetch_ahead() const {
    constexpr size_t kAhead = 4;
    if (pc_ + kAhead < info_.size()) {
      const auto* q = reinterpret_cast<const char*>(&info_[pc_ + kAhead]);
      for (size_t b = 0; b < sizeof(InstrInfo); b += 64) __builtin_prefetch(q + b);
      __builtin_prefetch(q + sizeof(InstrInfo) - 1);
    }
  }

  TimingContext& ctx_;
  const isa::Engine engine_;
  const int index_;
  const FastClock clock_;
  const isa::Stream& stream_;
  const LargeVector<InstrInfo>& info_;
  EngineStats& stats_;

  size_t pc_ = 0;
  uint64_t issued_ = 0;                          // issue numbers handed out
  uint64_t next_issue_cycle_ = 0;                // one issue per cycle
  std::array<uint64_t, kNumUnits> unit_free_{};  // cycle each unit is free again
  RegisterFile regs_;
  // Register-relative instructions as resolved at issue (core/control/dynamic_operands.h), kept
  // until they execute: engine instructions complete in issue order (popped from the front);
  // DMAs complete in the DMA engines, which hold a pointer, so those stay for the run.
  std::deque<isa::Instruction> resolved_, resolved_dma_;
  Picoseconds reg_load_retire_;  // when the latest reg_load's register is written
  Picoseconds last_retire_;      // retirement time of the latest instruction issued
  Picoseconds active_until_;     // end of the engine's active time counted so far
  // Retirement times of the last kRawWindow instructions issued, by issue number: an
  // instruction that reads what one of them wrote issues once it has retired (InstrInfo::
  // raw_back; AG2: a RAW-dependent instruction pays the static overhead, PG: 264 cycles
  // between dependent 1-element ones).
  std::array<Picoseconds, kRawWindow> retired_{};

  bool at_barrier_ = false;
  size_t barrier_index_ = 0;
  uint64_t barrier_id_ = 0;
  Picoseconds barrier_since_;

  // Stall accounting (EngineStats::stall): the current instruction has been held since
  // stall_since_ by stall_ (and, for a semaphore, by engine stall_on_), until it issues or
  // another constraint holds it.
  void hold(Stall why, int on, Picoseconds since, Picoseconds now);
  void end_hold(Picoseconds t);
  bool held_ = false;
  Stall stall_ = Stall::kOwn;
  int stall_on_ = -1;
  Picoseconds stall_since_;
  Picoseconds main_free_;   // when the main unit finishes its latest instruction (busy until)
  Picoseconds last_issue_;  // when the latest instruction issued

  bool try_pending_ = false;
  Picoseconds try_time_;
  uint64_t try_gen_ = 0;
};

inline void Sequencer::hold(Stall why, int on, Picoseconds since, Picoseconds now) {
  // A stall starts no earlier than the main unit is through with its last instruction (that
  // time is busy) and the previous instruction issued (that time was its own wait); it may
  // start after `now` when the engine tries while its main unit is still busy.
  const Picoseconds floor = std::max(main_free_, last_issue_);
  if (!held_) {
    held_ = true;
    stall_ = why;
    stall_on_ = on;
    stall_since_ = std::max(since, floor);
    return;
  }
  if (why == stall_ && on == stall_on_) return;
  end_hold(now);  // the time so far goes to what held it so far
  held_ = true;
  stall_ = why;
  stall_on_ = on;
  stall_since_ = std::max(now, floor);
}

inline void Sequencer::end_hold(Picoseconds t) {
  held_ = false;
  if (t <= stall_since_) return;
  const Picoseconds d = t - stall_since_;
  stats_.stall[static_cast<size_t>(stall_)] += d;
  if (stall_ == Stall::kSemaphore && stall_on_ >= 0)
    stats_.waited_on[static_cast<size_t>(stall_on_)] += d;
}

}  // namespace trnsim::core
