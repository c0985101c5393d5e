#include "core/dma_engines.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "core/timing_trace.h"

namespace trnsim::core {

namespace {
constexpr uint128 kPsPerSecond = 1'000'000'000'000ull;
constexpr uint64_t kEngineBits = 8;  // event payload: engine | generation << 8
constexpr uint64_t kEngineMask = (1u << kEngineBits) - 1;
constexpr double kBytesPerGB = 1e9;
constexpr double kPsPerNs = 1e3;

uint64_t bytes_per_second(double gbps) {
  return static_cast<uint64_t>(std::max<long long>(std::llround(gbps * kBytesPerGB), 1));
}
}  // namespace

DmaEngines::DmaEngines(TimingContext& ctx)
    : ctx_(ctx),
      engines_(std::max(ctx.spec.dma.engines, 1)),
      queues_(std::max(ctx.spec.dma.queues_per_engine, 1)),
      engine_rate_(bytes_per_second(ctx.spec.dma.engine_bandwidth_practical_gbps)),
      hbm_share_(
          bytes_per_second(ctx.chip.chip.hbm.bandwidth_gbps / std::max(ctx.chip.chip.cores, 1))),
      core_rate_(ctx.spec.dma.core_bandwidth_gbps
                     ? bytes_per_second(*ctx.spec.dma.core_bandwidth_gbps)
                     : UINT64_MAX),
      overhead_(std::llround(ctx.spec.dma.fixed_overhead_ns * kPsPerNs)),
      queues_by_engine_(static_cast<size_t>(engines_ * queues_)),
      active_(static_cast<size_t>(engines_)),
      round_robin_(static_cast<size_t>(engines_), 0),
      wake_at_(static_cast<size_t>(engines_), Picoseconds(INT64_MAX)),
      wake_gen_(static_cast<size_t>(engines_), 0) {
  TRNSIM_ASSERT(engines_ <= static_cast<int>(kEngineMask) + 1);
  ctx.result.dma.engine_busy.assign(static_cast<size_t>(engines_), Picoseconds(0));
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

void DmaEngines::submit(const isa::Instruction& ins, const DmaPlan& plan, isa::Engine trigger,
                        uint64_t id, Picoseconds t) {
  const uint32_t tid = new_transfer();
  transfers_[tid] = Transfer{&ins, &plan, trigger, id, static_cast<int32_t>(plan.pieces.size())};
  if (plan.pieces.empty()) {  // nothing to move: completes at once
    ++ctx_.result.dma.transfers;
    ctx_.apply_signals(ins, t);
    free_transfers_.push_back(tid);
    return;
  }
  const Picoseconds ready = t + overhead_;
  for (size_t k = 0; k < plan.pieces.size(); ++k) {
    const int e = plan.pieces[k].engine;
    queues_by_engine_[static_cast<size_t>(e * queues_ + plan.queue)].push_back(
        Pending{tid, static_cast<uint32_t>(k), ready});
    wake_engine(e, ready);
  }
}

void DmaEngines::wake_engine(int engine, Picoseconds t) {
  const auto e = static_cast<size_t>(engine);
  if (active_[e].busy || wake_at_[e] <= t) return;
  wake_at_[e] = t;
  ctx_.sim.schedule(t, this, kWake, static_cast<uint64_t>(engine) | (++wake_gen_[e] << kEngineBits),
                    kPriorityComplete);
}

void DmaEngines::handle(const sim::Event& ev) {
  const int engine = static_cast<int>(ev.payload & kEngineMask);
  const uint64_t gen = ev.payload >> kEngineBits;
  const auto e = static_cast<size_t>(engine);
  const Picoseconds now = ctx_.sim.now();
  if (ev.kind == kWake) {
    if (gen != wake_gen_[e]) return;
    wake_at_[e] = Picoseconds(INT64_MAX);
    start_next(engine, now);
    return;
  }
  if (!active_[e].busy || gen != active_[e].gen) return;  // a rate change superseded it
  finish_piece(engine, now);
}

void DmaEngines::start_next(int engine, Picoseconds now) {
  Active& a = active_[static_cast<size_t>(engine)];
  if (a.busy) return;
  Picoseconds earliest(INT64_MAX);
  int& rr = round_robin_[static_cast<size_t>(engine)];
  for (int i = 0; i < queues_; ++i) {
    const int q = (rr + i) % queues_;
    auto& fifo = queues_by_engine_[static_cast<size_t>(engine * queues_ + q)];
    if (fifo.empty()) continue;
    if (fifo.front().ready > now) {
      earliest = std::min(earliest, fifo.front().ready);
      continue;
    }
    const Pending p = fifo.front();
    fifo.pop_front();
    rr = (q + 1) % queues_;
    const DmaPlan& plan = *transfers_[p.transfer].plan;
    const DmaPiece& piece = plan.pieces[p.piece];
    a = Active{};
    a.busy = true;
    a.transfer = p.transfer;
    a.piece = p.piece;
    a.hbm_sides = piece.hbm_sides;
    a.percent = std::max(plan.throughput_percent, 1);
    // Work at full rate = bytes x 100 / percent (a 50% transfer moves its bytes in twice the time).
    const uint128 work = static_cast<uint128>(piece.bytes) * kPsPerSecond * 100u;
    a.remaining = (work + static_cast<uint128>(a.percent) - 1) / static_cast<uint128>(a.percent);
    a.last = a.started = now;
    rebalance(now, engine);
    return;
  }
  if (earliest.v != INT64_MAX) wake_engine(engine, earliest);
  rebalance(now, -1);
}

void DmaEngines::rebalance(Picoseconds now, int started) {
  uint64_t weight = 0, busy = 0;
  for (Active& a : active_) {
    if (!a.busy) continue;
    ++busy;
    const uint128 done = static_cast<uint128>((now - a.last).v) * a.rate;
    a.remaining = done >= a.remaining ? 0 : a.remaining - done;
    a.last = now;
    weight += static_cast<uint64_t>(a.hbm_sides);
  }
  // The core's cap (spec dma.core_bandwidth_gbps) is shared equally by the busy engines.
  const uint64_t engine_rate = busy ? std::min(engine_rate_, core_rate_ / busy) : engine_rate_;
  const uint64_t hbm_rate = weight ? std::min(engine_rate, hbm_share_ / weight) : engine_rate;
  for (size_t e = 0; e < active_.size(); ++e) {
    Active& a = active_[e];
    if (!a.busy) continue;
    const uint64_t rate = std::max<uint64_t>(a.hbm_sides ? hbm_rate : engine_rate, 1);
    if (rate == a.rate && static_cast<int>(e) != started) continue;
    a.rate = rate;
    const uint128 ps = (a.remaining + rate - 1) / rate;
    ctx_.sim.schedule(now + Picoseconds(static_cast<int64_t>(ps)), this, kPieceDone,
                      static_cast<uint64_t>(e) | (++a.gen << kEngineBits), kPriorityComplete);
  }
}

void DmaEngines::finish_piece(int engine, Picoseconds now) {
  Active& a = active_[static_cast<size_t>(engine)];
  a.busy = false;
  Transfer& t = transfers_[a.transfer];
  const DmaPiece& piece = t.plan->pieces[a.piece];
  DmaStats& st = ctx_.result.dma;
  st.engine_busy[static_cast<size_t>(engine)] += now - a.started;
  ++st.pieces;
  st.bytes += piece.bytes;
  if (ctx_.trace) ctx_.trace->on_piece(engine, t.plan->queue, *t.ins, t.trigger, a.started, now);
  if (--t.pieces_left == 0) {
    ++st.transfers;
    st.hbm_read_bytes += t.plan->hbm_read_bytes;
    st.hbm_write_bytes += t.plan->hbm_write_bytes;
    st.finish = std::max(st.finish, now);
    if (ctx_.executor != nullptr) ctx_.executor->execute(*t.ins, t.trigger, t.id);
    ctx_.apply_signals(*t.ins, now);
    free_transfers_.push_back(a.transfer);
  }
  start_next(engine, now);
}

}  // namespace trnsim::core
