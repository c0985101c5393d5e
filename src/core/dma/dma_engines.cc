#include "core/dma/dma_engines.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/error.h"
#include "core/timing/timing_path.h"
#include "core/timing/timing_trace.h"

namespace trnsim::core {

namespace {
constexpr uint128 kPsPerSecond = 1'000'000'000'000ull;
constexpr double kBytesPerGB = 1e9;
constexpr double kPsPerNs = 1e3;
// share_of's unit: 2^96 / (bytes per second) keeps ~1e-16 of precision for any cap.
constexpr uint128 kShareScale = uint128{1} << 96;

uint64_t bytes_per_second(double gbps) {
  return static_cast<uint64_t>(std::max<long long>(std::llround(gbps * kBytesPerGB), 1));
}
}  // namespace

DmaEngines::DmaEngines(TimingContext& ctx, HbmPool& pool, bool fold)
    : ctx_(ctx),
      engines_(std::max(ctx.spec.dma.engines, 1)),
      queues_(std::max(ctx.spec.dma.queues_per_engine, 1)),
      pool_(pool),
      engine_rate_(bytes_per_second(ctx.spec.dma.engine_bandwidth_practical_gbps)),
      core_rate_(ctx.spec.dma.core_bandwidth_gbps
                     ? bytes_per_second(*ctx.spec.dma.core_bandwidth_gbps)
                     : UINT64_MAX),
      block_rate_(ctx.spec.dma.core_block_bandwidth_gbps
                      ? bytes_per_second(*ctx.spec.dma.core_block_bandwidth_gbps)
                      : core_rate_),
      write_rate_(ctx.spec.dma.core_write_bandwidth_gbps
                      ? bytes_per_second(*ctx.spec.dma.core_write_bandwidth_gbps)
                      : UINT64_MAX),
      overhead_(std::llround(ctx.spec.dma.fixed_overhead_ns * kPsPerNs)),
      descriptor_work_(static_cast<uint128>(std::llround(
                           ctx.spec.dma.descriptor_overhead_ns.value_or(0) * kPsPerNs)) *
                       engine_rate_),
      fold_(fold && ctx.prog.dma_engines_symmetric() ? engines_ : 1),
      queues_by_engine_(static_cast<size_t>(engines_ * queues_)),
      active_(static_cast<size_t>(engines_)),
      round_robin_(static_cast<size_t>(engines_), 0),
      ready_queues_(static_cast<size_t>(engines_), 0),
      wake_at_(static_cast<size_t>(engines_), Picoseconds(INT64_MAX)) {
  for (int gathered = 0; gathered < 2; ++gathered)
    for (int writes = 0; writes < 2; ++writes)
      shares_[static_cast<size_t>(gathered * 2 + writes)] =
          compute_share(gathered != 0, writes != 0);
  // Queue sets are 64-bit masks (DMA-OV: 16 queues per engine).
  if (queues_ > 64) throw InputError("core.dma.queues_per_engine: at most 64 are modelled");
  ctx.result.dma.engine_busy.assign(static_cast<size_t>(engines_), Picoseconds(0));
  pool_.join(*this);
}

uint32_t DmaEngines::new_transfer() {
  if (!free_transfers_.empty()) {
    const uint32_t t = free_transfers_.back();
    free_transfers_.pop_back();
    return t;
  }
  transfers_.emplace_back();
  return static_cast<uint32_t>(transfers_.size() - 1);
}

void DmaEngines::submit(const isa::Instruction& ins, const DmaPlan& plan,
                        std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                        Picoseconds t, DmaListener* listener, uint64_t tag) {
  // A transfer a listener hears of (sendrecv) is another core's business: not followed.
  const uint32_t node = ctx_.path != nullptr && listener == nullptr
                            ? ctx_.path->on_dma_submit(trigger, t)
                            : profile::kNoNode;
  if (plan.num_pieces == 0) {  // nothing to move: completes at once
    ++ctx_.result.dma.transfers;
    if (node != profile::kNoNode) ctx_.path->on_dma_done(node, profile::kNoNode, t, t, signals);
    if (listener != nullptr)
      listener->dma_done(tag, t);
    else
      ctx_.apply_signals(signals, t);
    return;
  }
  const uint32_t tid = new_transfer();
  transfers_[tid] =
      Transfer{&ins,     &plan, signals, trigger, id, static_cast<int32_t>(plan.num_pieces),
               listener, tag,   node};
  const Picoseconds ready = t + overhead_;
  // Folded: engine 0 takes the first piece and stands for the engines of the others.
  const int32_t simulated = fold_ > 1 ? 1 : plan.num_pieces;
  for (int32_t k = 0; k < simulated; ++k) {
    const int e = fold_ > 1 ? 0 : plan.piece(k).engine;
    queues_by_engine_[static_cast<size_t>(e) * static_cast<size_t>(queues_) +
                      static_cast<size_t>(plan.queue)]
        .push_back(Pending{tid, static_cast<uint32_t>(k), ready});
    ready_queues_[static_cast<size_t>(e)] |= uint64_t{1} << plan.queue;
    wake_engine(e, ready);
  }
}

void DmaEngines::wake_engine(int engine, Picoseconds t) {
  const auto e = static_cast<size_t>(engine);
  if (active_[e].busy || wake_at_[e] <= t) return;
  wake_at_[e] = t;
  wakes_.emplace(t, engine);
  if (t < wake_event_at_) schedule_wake_event();
}

void DmaEngines::schedule_wake_event() {
  // Wakes superseded by an earlier one for the same engine are dropped here, lazily.
  while (!wakes_.empty() &&
         wake_at_[static_cast<size_t>(wakes_.top().second)] != wakes_.top().first)
    wakes_.pop();
  wake_event_at_ = wakes_.empty() ? Picoseconds(INT64_MAX) : wakes_.top().first;
  ++wake_gen_;
  if (!wakes_.empty()) ctx_.sim.schedule(wake_event_at_, this, kWake, wake_gen_, kPriorityComplete);
}

void DmaEngines::handle(const sim::Event& ev) {
  const Picoseconds now = ctx_.sim.now();
  if (ev.kind == kWake) {
    if (ev.payload != wake_gen_) return;  // an earlier wake superseded it
    advance(now);
    while (!wakes_.empty() && wakes_.top().first <= now) {
      const auto [t, engine] = wakes_.top();
      wakes_.pop();
      if (wake_at_[static_cast<size_t>(engine)] != t) continue;
      wake_at_[static_cast<size_t>(engine)] = Picoseconds(INT64_MAX);
      start_next(engine, now);
    }
    schedule_wake_event();
    settle(now);
    return;
  }
  if (ev.payload != done_gen_) return;  // a rate change superseded it
  done_at_ = Picoseconds(INT64_MAX);
  advance(now);
  // Every piece done by now, class by class; an engine that finishes starts its next piece,
  // which cannot be done before `now` unless it has nothing to move.
  for (DmaRateClass& c : classes_) {
    uint32_t engine = 0;
    while (c.pop_done(engine)) finish_piece(static_cast<int>(engine), now);
  }
  settle(now);
}

void DmaEngines::advance(Picoseconds now) {
  for (DmaRateClass& c : classes_) c.advance(now);
}

void DmaEngines::start_next(int engine, Picoseconds now) {
  const auto e = static_cast<size_t>(engine);
  Active& a = active_[e];
  if (a.busy) return;
  Picoseconds earliest(INT64_MAX);
  int& rr = round_robin_[e];
  // Non-empty queues from the round-robin position on: the set rotated so that bit 0 is rr.
  const uint64_t set = ready_queues_[e];
  const uint64_t rotated = rr == 0 ? set : (set >> rr) | (set << (queues_ - rr));
  for (uint64_t left = rotated & (queues_ == 64 ? ~uint64_t{0} : (uint64_t{1} << queues_) - 1);
       left != 0; left &= left - 1) {
    int q = rr + std::countr_zero(left);  // < 2 x queues: no division on this hot path
    if (q >= queues_) q -= queues_;
    auto& fifo = queues_by_engine_[e * static_cast<size_t>(queues_) + static_cast<size_t>(q)];
    if (fifo.front().ready > now) {
      earliest = std::min(earliest, fifo.front().ready);
      continue;
    }
    const Pending p = fifo.front();
    fifo.pop_front();
    if (fifo.empty()) ready_queues_[e] &= ~(uint64_t{1} << q);
    rr = q + 1 == queues_ ? 0 : q + 1;
    const DmaPlan& plan = *transfers_[p.transfer].plan;
    const DmaPiece piece = plan.piece(static_cast<int32_t>(p.piece));
    a = Active{true, p.transfer, p.piece, piece.hbm_sides, share_of(piece), now};
    // Taken later than it was ready: the engine was busy with another transfer's piece.
    if (ctx_.path && now > p.ready) a.behind = ctx_.path->dma_engine_last(engine);
    busy_ += static_cast<uint64_t>(fold_);
    core_shares_ += a.core_share * static_cast<uint64_t>(fold_);
    hbm_weight_ += static_cast<uint64_t>(piece.hbm_sides) * static_cast<uint64_t>(fold_);
    // Work at full rate = bytes x 100 / percent (a 50% transfer moves its bytes in twice the time).
    const uint128 bytes_work = static_cast<uint128>(piece.bytes) * kPsPerSecond;
    const int32_t percent = std::max(plan.throughput_percent, 1);
    // Each descriptor adds the engine's fixed time for it, as work at its own rate.
    const uint128 work = (percent == 100 ? bytes_work
                                         : (bytes_work * 100u + static_cast<uint128>(percent) - 1) /
                                               static_cast<uint128>(percent)) +
                         static_cast<uint128>(piece.descriptors) * descriptor_work_;
    classes_[piece.hbm_sides ? kTouchesHbm : kOnChip].add(work, static_cast<uint32_t>(engine));
    return;
  }
  if (earliest.v != INT64_MAX) wake_engine(engine, earliest);
}

uint128 DmaEngines::compute_share(bool gathered, bool writes_hbm) const {
  uint64_t cap = gathered ? core_rate_ : block_rate_;
  if (writes_hbm) cap = std::min(cap, write_rate_);
  return cap == UINT64_MAX ? 0 : kShareScale / cap;
}

uint64_t DmaEngines::capped_rate() const {
  // Every engine at rate r: r x sum over pieces of 1 / C_kind = 1 (the core's time, shared).
  if (busy_ == 0 || core_shares_ == 0) return UINT64_MAX;
  if (core_shares_ != capped_for_) {  // the same running mix as last time: no division
    const uint128 r = kShareScale / core_shares_;
    capped_for_ = core_shares_;
    capped_rate_ = r > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(r);
  }
  return capped_rate_;
}

void DmaEngines::settle(Picoseconds now) {
  // The core's caps (spec dma.core_bandwidth_gbps and core_block_bandwidth_gbps) are shared
  // equally by the busy engines.
  const uint64_t engine_rate = std::min(engine_rate_, capped_rate());
  if (hbm_weight_ != pool_weight_) {
    const uint64_t before = pool_weight_;
    pool_weight_ = hbm_weight_;
    pool_.reweigh(*this, before, hbm_weight_, now);
  }
  const uint64_t hbm_rate = std::min(engine_rate, pool_.share());
  classes_[kOnChip].set_rate(std::max<uint64_t>(engine_rate, 1));
  classes_[kTouchesHbm].set_rate(std::max<uint64_t>(hbm_rate, 1));
  const Picoseconds next =
      std::min(classes_[kOnChip].next_done(), classes_[kTouchesHbm].next_done());
  if (next == done_at_) return;
  done_at_ = next;
  ++done_gen_;
  if (next.v != INT64_MAX)
    ctx_.sim.schedule(std::max(next, now), this, kPiecesDone, done_gen_, kPriorityComplete);
}

void DmaEngines::finish_piece(int engine, Picoseconds now) {
  Active& a = active_[static_cast<size_t>(engine)];
  a.busy = false;
  busy_ -= static_cast<uint64_t>(fold_);
  core_shares_ -= a.core_share * static_cast<uint64_t>(fold_);
  hbm_weight_ -= static_cast<uint64_t>(a.hbm_sides) * static_cast<uint64_t>(fold_);
  Transfer& t = transfers_[a.transfer];
  const DmaPiece piece = t.plan->piece(static_cast<int32_t>(a.piece));
  DmaStats& st = ctx_.result.dma;
  if (fold_ == 1) {
    st.engine_busy[static_cast<size_t>(engine)] += now - a.started;
    if (ctx_.trace)
      ctx_.trace->on_piece(engine, t.plan->queue, *t.ins, t.trigger, t.id, a.started, now);
  } else {  // the same piece on every engine
    for (Picoseconds& busy : st.engine_busy) busy += now - a.started;
    if (ctx_.trace)
      for (int32_t k = 0; k < t.plan->num_pieces; ++k)
        ctx_.trace->on_piece(t.plan->piece(k).engine, t.plan->queue, *t.ins, t.trigger, t.id,
                             a.started, now);
  }
  st.pieces += static_cast<uint64_t>(fold_);
  st.bytes += piece.bytes * fold_;
  t.pieces_left -= fold_;
  if (ctx_.path && t.path_node != profile::kNoNode) ctx_.path->on_piece_done(engine, t.path_node);
  if (t.pieces_left == 0) {
    ++st.transfers;
    st.hbm_read_bytes += t.plan->hbm_read_bytes;
    st.hbm_write_bytes += t.plan->hbm_write_bytes;
    st.finish = std::max(st.finish, now);
    // The slot is free before anyone hears of the end: a listener may submit again (which
    // can reuse or reallocate transfers_, so `t` is not used past this point).
    const Transfer done = t;
    free_transfers_.push_back(a.transfer);
    if (ctx_.path && done.path_node != profile::kNoNode)
      ctx_.path->on_dma_done(done.path_node, a.behind, a.started, now, done.signals);
    if (done.listener != nullptr) {
      done.listener->dma_done(done.tag, now);
    } else {
      if (ctx_.executor != nullptr) ctx_.executor->execute(*done.ins, done.trigger, done.id);
      ctx_.apply_signals(done.signals, now);
    }
  }
  start_next(engine, now);
}

}  // namespace trnsim::core
