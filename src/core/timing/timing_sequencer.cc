#include "core/timing/timing_sequencer.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "base/interrupt.h"
#include "core/control/control_step.h"
#include "core/control/dynamic_operands.h"
#include "core/dma/dma_engines.h"
#include "core/exec/semantics.h"
#include "core/timing/cross_core.h"
#include "core/timing/timing_path.h"
#include "core/timing/timing_trace.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {
// One instruction issues per sequencer cycle (assumption: HARDWARE.md s11 item 1).
constexpr uint64_t kIssueCycles = 1;
constexpr uint64_t kLow32 = 0xFFFF'FFFFull;

void wake_engines(TimingContext& ctx, uint8_t mask, Picoseconds t) {
  for (int e = 0; e < isa::kNumEngines; ++e)
    if (mask & (1u << e)) ctx.seq[static_cast<size_t>(e)]->wake(t);
}
}  // namespace

Sequencer::Sequencer(TimingContext& ctx, isa::Engine engine, double clock_ghz)
    : ctx_(ctx),
      engine_(engine),
      index_(static_cast<int>(engine)),
      clock_(sim::Clock::from_ghz(clock_ghz)),
      stream_(ctx.prog.stream(engine)),
      info_(ctx.prog.info(engine)),
      stats_(ctx.result.engines[static_cast<size_t>(engine)]) {}

void Sequencer::wake(Picoseconds t) { schedule_try(clock_.next_edge(t)); }

void Sequencer::schedule_try(Picoseconds t) {
  if (finished() || at_barrier_ || ctx_.stopped) return;
  if (try_pending_ && try_time_ <= t) return;
  try_pending_ = true;
  try_time_ = t;
  ctx_.sim.schedule(t, this, kTry, ++try_gen_, issue_priority(ctx_.core, index_));
}

void Sequencer::handle(const sim::Event& e) {
  if (e.kind == kComplete) {
    complete(e.payload);
    return;
  }
  if (e.kind == kRelease) {
    released(ctx_.sim.now());
    return;
  }
  if (e.payload != try_gen_) return;  // superseded by an earlier attempt
  try_pending_ = false;
  try_issue();
}

void Sequencer::try_issue() {
  Picoseconds now = ctx_.sim.now();
  uint64_t cycle = clock_.cycle_at_or_after(now);
  while (!finished() && !at_barrier_ && !ctx_.stopped) {
    const InstrInfo& info = info_[pc_];
    // When its unit can take it (the engine's own pipeline: busy, not a stall), then what
    // else holds it (EngineStats::stall).
    const uint64_t unit_ready =
        std::max(next_issue_cycle_, unit_free_[static_cast<size_t>(info.cost.unit)]);
    uint64_t ready = unit_ready;
    if (info.cost.waits_background)
      ready = std::max(ready, unit_free_[static_cast<size_t>(Unit::kBackground)]);
    // Branches and register-relative instructions read registers a reg_load may still be
    // fetching from memory.
    if ((info.control || info.registers) && reg_load_retire_ > now)
      ready = std::max(ready, clock_.cycle_at_or_after(reg_load_retire_));
    if (info.raw_back != 0 && info.raw_back <= issued_)
      ready = std::max(
          ready, clock_.cycle_at_or_after(retired_[(issued_ - info.raw_back) % retired_.size()]));
    if (ready > cycle) {
      if (ready > unit_ready && ready > cycle)
        hold(Stall::kOwn, -1, clock_.cycles_to_ps(std::max(unit_ready, cycle)), now);
      const Picoseconds t = clock_.cycles_to_ps(ready);
      if (t < ctx_.sim.next_time()) {  // nothing else happens before: run on without an event
        cycle = ready;
        now = t;
        continue;
      }
      schedule_try(t);
      return;
    }
    if (const isa::SemWait* w = ctx_.sems.first_unmet(ctx_.prog.waits(info), now)) {
      const std::vector<uint8_t>& producers = ctx_.prog.sem_producers();
      const uint8_t by = w->sem < producers.size() ? producers[w->sem] : 0;
      const int engine_bits = by & (kDmaProducer - 1);
      if ((by & kDmaProducer) != 0 || engine_bits == 0)
        hold(Stall::kDma, -1, clock_.cycles_to_ps(unit_ready), now);
      else
        hold(Stall::kSemaphore, std::countr_zero(static_cast<unsigned>(engine_bits)),
             clock_.cycles_to_ps(unit_ready), now);
      // Woken by the signal, or at once at the time of signals already deferred.
      const Picoseconds at = ctx_.sems.add_waiter(*w, index_, now);
      wake_engines(ctx_, ctx_.ports.withdraw(index_), now);
      if (at != Semaphores::kNever) wake(at);
      return;
    }
    ctx_.sems.leave(index_);
    if (info.ports != 0) {
      Picoseconds retry;
      if (!ctx_.ports.available(info.ports, index_, now, retry)) {
        hold(Stall::kPort, -1, clock_.cycles_to_ps(unit_ready), now);
        if (retry.v != INT64_MAX) schedule_try(clock_.next_edge(retry));
        return;  // else woken when the engine ahead of it takes or leaves the port
      }
    }
    // Ctrl-C: a stream that runs on without events (a loop of register ops) checks here.
    if ((ctx_.executed & 1023) == 1023) check_interrupt();
    if (ctx_.max_instructions != 0 && ctx_.executed >= ctx_.max_instructions) {
      ctx_.fault(mem::FaultKind::kStepLimit, stream_[pc_], engine_, issued_,
                 fmt::format("instruction budget of {} exhausted (--max-instructions)",
                             ctx_.max_instructions));
      ctx_.stopped = true;
      return;
    }
    issue(stream_[pc_], info, cycle);
  }
}

void Sequencer::issue(const isa::Instruction& ins, const InstrInfo& info, uint64_t cycle) {
  const uint64_t id = issued_++;
  const size_t index = pc_;
  ++ctx_.executed;
  ++ctx_.result.instructions;
  const Cost& c = info.cost;
  const Picoseconds t0 = clock_.cycles_to_ps(cycle);
  const Picoseconds t_free = clock_.cycles_to_ps(cycle + c.ii);
  const Picoseconds t_done = clock_.cycles_to_ps(cycle + c.latency);
  if (held_) end_hold(t0);
  last_issue_ = t0;
  unit_free_[static_cast<size_t>(c.unit)] = cycle + c.ii;
  next_issue_cycle_ = cycle + kIssueCycles;
  if (info.ports != 0) wake_engines(ctx_, ctx_.ports.acquire(info.ports, index_, t_free), t_free);

  ++stats_.instructions;
  ++stats_.by_opcode[static_cast<size_t>(info.op)];
  (c.unit == Unit::kMain ? stats_.busy : stats_.background_busy) += t_free - t0;
  if (c.unit == Unit::kMain) main_free_ = std::max(main_free_, t_free);
  // In-order retirement: values and signals take effect at completion, but not before those of
  // an earlier instruction of the same engine (a LoadStationary finishing in the background
  // must not replace the stationary of a matmul still streaming; a sem_signal after a long op
  // must not fire first). Times are non-decreasing in issue order, so the completion events
  // of one engine fire in issue order.
  const Picoseconds t_retire = std::max(t_done, last_retire_);
  last_retire_ = t_retire;
  retired_[id % retired_.size()] = t_retire;
  // Issue times only grow, so the union of [issue, retire] intervals grows at its end.
  if (t_retire > active_until_) {
    stats_.active += t_retire - std::max(t0, active_until_);
    active_until_ = t_retire;
  }
  stats_.finish = std::max(stats_.finish, t_retire);
  ctx_.result.tensor_flops += info.flops;
  ctx_.result.sbuf_high_water = std::max(ctx_.result.sbuf_high_water, info.sbuf_end);
  ctx_.result.psum_high_water = std::max(ctx_.result.psum_high_water, info.psum_end);
  if (ctx_.trace) ctx_.trace->on_issue(engine_, c.unit, index, t0, t_free, t_retire);
  if (ctx_.path)
    ctx_.path->on_issue(engine_, index, info, t0, clock_.cycles_to_ps(cycle + kIssueCycles), t_free,
                        t_retire);

  const bool control = info.control;
  const isa::Instruction* run = info.registers ? resolve(ins, info, id) : &ins;
  if (info.op == isa::Opcode::kRegLoad) {
    reg_load_retire_ = t_retire;
    if (ctx_.executor == nullptr)
      ctx_.fault(mem::FaultKind::kUnsupported, ins, engine_, id,
                 "reg_load reads a value from memory, and a timing-only run has none: its "
                 "register is left unchanged (run with values)");
  }
  pc_ = control ? run_control(ins, id) : pc_ + 1;
  prefetch_ahead();
  if (info.op == isa::Opcode::kCoreBarrier && ctx_.cross != nullptr) {
    // Passes when the other cores are there too; its signals apply then (released()).
    at_barrier_ = true;
    barrier_since_ = t_retire;
    barrier_index_ = index;
    barrier_id_ = id;
    ctx_.cross->barrier(ctx_.core, *this, t_retire);
    return;
  }
  if (info.op == isa::Opcode::kSendRecv) {
    if (ctx_.cross != nullptr) {
      ctx_.cross->sendrecv(ctx_.core, ins, ctx_.prog.dma_plan(info.dma_plan),
                           ctx_.prog.signals(info), engine_, id, t0);
      return;
    }
    ctx_.fault(mem::FaultKind::kPeer, ins, engine_, id,
               fmt::format("sendrecv to core {} on pipe {} has no peer core: run the kernel on a "
                           "logical core of 2 (LNC=2)",
                           ins.p.send_to, ins.p.pipe));
    ctx_.apply_signals(ctx_.prog.signals(info), t_retire);  // the rest of the run goes on
    return;
  }
  if (isa::is_collective(info.op)) {
    if (ctx_.cross != nullptr) {
      ctx_.cross->collective(ctx_.core, ins, ctx_.prog.dma_plan(info.dma_plan),
                             ctx_.prog.signals(info), engine_, id, t0);
      return;
    }
    ctx_.fault(mem::FaultKind::kPeer, ins, engine_, id, collective_alone_message(ins));
    ctx_.apply_signals(ctx_.prog.signals(info), t_retire);  // the rest of the run goes on
    return;
  }
  if (info.dma && run == nullptr) {
    ctx_.apply_signals(ctx_.prog.signals(info), t_retire);  // faulted at issue: nothing moves
  } else if (info.dma) {
    ctx_.dma->submit(*run, ctx_.prog.dma_plan(info.dma_plan), ctx_.prog.signals(info), engine_, id,
                     t0);
  } else if (info.num_signals != 0 && ctx_.defers_signals()) {
    ctx_.defer(ctx_.prog.signals(info), t_retire, t0);  // no completion event needed
  } else if (info.num_signals != 0 || (ctx_.executor != nullptr && !control)) {
    ctx_.sim.schedule(t_retire, this, kComplete, index | ((id & kLow32) << 32), kPriorityComplete);
  }
}

void Sequencer::complete(uint64_t payload) {
  const size_t index = payload & kLow32;
  // The issue number from its low 32 bits: the latest one handed out that matches.
  const uint64_t last = issued_ - 1;
  const uint64_t id = last - ((last - (payload >> 32)) & kLow32);
  const InstrInfo& info = info_[index];
  if (ctx_.executor != nullptr && !info.control) {
    if (info.registers) {
      // Resolved at issue; a nop stands for one that faulted there.
      ctx_.executor->execute(resolved_.front(), engine_, id);
      resolved_.pop_front();
    } else {
      ctx_.executor->execute(stream_[index], engine_, id);
    }
    const int rd = stream_[index].p.reg_dst;
    if (info.op == isa::Opcode::kRegLoad && regs_.valid(rd))  // else the executor faulted
      regs_.set(rd, ctx_.executor->register_value(engine_, rd));
  }
  ctx_.apply_signals(ctx_.prog.signals(info), ctx_.sim.now());
}

void Sequencer::release_barrier(Picoseconds t) {
  ctx_.sim.schedule(t, this, kRelease, 0, kPriorityComplete);
}

void Sequencer::released(Picoseconds now) {
  at_barrier_ = false;
  if (now > barrier_since_)
    stats_.stall[static_cast<size_t>(Stall::kBarrier)] += now - barrier_since_;
  last_retire_ = std::max(last_retire_, now);
  stats_.finish = std::max(stats_.finish, now);
  next_issue_cycle_ = std::max(next_issue_cycle_, clock_.cycle_at_or_after(now));
  if (ctx_.path)
    ctx_.path->on_barrier_release(engine_, ctx_.prog.signals(info_[barrier_index_]), now);
  ctx_.apply_signals(ctx_.prog.signals(info_[barrier_index_]), now);
  wake(now);
}

const isa::Instruction* Sequencer::resolve(const isa::Instruction& ins, const InstrInfo& info,
                                           uint64_t id) {
  isa::Instruction r = ins;
  const RegisterResolution res = resolve_registers(r, regs_);
  if (!res.ok()) {
    ctx_.fault(res.out_of_range ? mem::FaultKind::kIndexRange : mem::FaultKind::kRegister, ins,
               engine_, id, res.fault);
    if (info.dma) return nullptr;
    r = isa::Instruction{};  // executes as nothing, in its place in the completion order
    r.op = isa::Opcode::kNop;
    r.engine = ins.engine;
  }
  // Only a run with values executes it (and pops it).
  if (ctx_.executor == nullptr && !info.dma) return &ins;
  std::deque<isa::Instruction>& q = info.dma ? resolved_dma_ : resolved_;
  q.push_back(std::move(r));
  if (info.dma && ctx_.trace) ctx_.trace->on_resolved(&q.back(), static_cast<uint32_t>(pc_));
  return &q.back();
}

size_t Sequencer::run_control(const isa::Instruction& ins, uint64_t id) {
  // Semantics shared with the functional executor (core/control/control_step.h); a control
  // instruction that faults falls through to the next one.
  ControlStep s = step_control(ins, regs_);
  if (s.jump && static_cast<size_t>(*s.jump) > stream_.size())
    s = {std::nullopt,
         fmt::format("branch target {} outside the stream (0..{})", *s.jump, stream_.size())};
  if (s.ok()) return s.next_pc(pc_);
  ctx_.fault(mem::FaultKind::kRegister, ins, engine_, id, std::move(s.fault));
  return pc_ + 1;
}

}  // namespace trnsim::core
