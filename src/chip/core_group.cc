#include "chip/core_group.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/exec/exec_context.h"
#include "isa/names.h"
#include "mem/tile_io.h"

namespace trnsim::chip {

namespace {
constexpr double kPsPerNs = 1e3;
}  // namespace

CoreGroup::CoreGroup(const arch::ChipSpec& chip, int cores)
    : remote_(std::llround(chip.chip.lnc.remote_semaphore_ns * kPsPerNs)),
      members_(static_cast<size_t>(std::max(cores, 1))) {}

void CoreGroup::attach(int rank, core::CoreTiming& timing, core::Executor* exec) {
  Member& m = members_.at(static_cast<size_t>(rank));
  m.timing = &timing;
  m.exec = exec;
}

void CoreGroup::barrier(int core, core::Sequencer& seq, Picoseconds t) {
  members_[static_cast<size_t>(core)].barriers.emplace_back(&seq, t);
  for (const Member& m : members_)
    if (m.barriers.empty()) return;  // someone has not arrived yet
  // Every core's matching barrier: each passes once it has heard from all the others.
  std::vector<std::pair<core::Sequencer*, Picoseconds>> arrived;
  for (Member& m : members_) {
    arrived.push_back(m.barriers.front());
    m.barriers.pop_front();
  }
  for (size_t c = 0; c < arrived.size(); ++c) {
    Picoseconds pass = arrived[c].second;
    for (size_t o = 0; o < arrived.size(); ++o)
      if (o != c) pass = std::max(pass, arrived[o].second + remote_);
    arrived[c].first->release_barrier(pass);
  }
}

void CoreGroup::collective(int core, const isa::Instruction& ins, const core::DmaPlan& plan,
                           std::span<const isa::SemSignal> signals, isa::Engine trigger,
                           uint64_t id, Picoseconds t) {
  if (ranks_ != nullptr) {
    ranks_->collective(first_ + core, ins, plan, signals, trigger, id, t);
    return;
  }
  core::TimingContext& ctx = members_[static_cast<size_t>(core)].timing->context();
  ctx.fault(mem::FaultKind::kPeer, ins, trigger, id,
            fmt::format("collective {} between the {} physical cores of a logical core: "
                        "collectives run between ranks, each a logical core "
                        "(trnsim.nki.run_ranks)",
                        isa::name_of(ins.p.collective), members_.size()));
  ctx.apply_signals(signals, t);
}

void CoreGroup::fault(const Exchange& x, std::string message) {
  core::TimingContext& ctx = members_[static_cast<size_t>(x.core)].timing->context();
  ctx.fault(mem::FaultKind::kPeer, *x.ins, x.trigger, x.id, std::move(message));
}

void CoreGroup::sendrecv(int core, const isa::Instruction& ins, const core::DmaPlan& plan,
                         std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                         Picoseconds t) {
  const auto x = static_cast<uint32_t>(exchanges_.size());
  exchanges_.push_back(Exchange{{core, &ins, &plan, signals, trigger, id, t}});
  // The sequencer recorded the sendrecv's node just before handing it over.
  if (const core::TimingPath* path = members_[static_cast<size_t>(core)].timing->context().path)
    exchanges_[x].path_node = path->last_node(trigger);
  const int n = static_cast<int>(members_.size());
  const isa::Params& p = ins.p;
  const auto peer = [&](int r) { return r >= 0 && r < n && r != core; };
  if (!peer(p.send_to) || !peer(p.recv_from)) {
    fault(exchanges_[x],
          fmt::format("send_to={} recv_from={}: the peers must be other cores of the logical "
                      "core (ranks 0..{}, this is {})",
                      p.send_to, p.recv_from, n - 1, core));
    exchanges_[x].sent = exchanges_[x].received = true;  // the rest of the run goes on
    finish_if_done(x, t);
    return;
  }
  // Our send meets the receiver's waiting receive from us, or waits for it; our receive
  // meets the sender's waiting send to us, or waits for it.
  if (const auto to =
          meet(recvs_[Key{p.send_to, core, p.pipe}], x, sends_[Key{core, p.send_to, p.pipe}]))
    start(x, *to);
  if (const auto from =
          meet(sends_[Key{p.recv_from, core, p.pipe}], x, recvs_[Key{core, p.recv_from, p.pipe}]))
    start(*from, x);
}

std::optional<uint32_t> CoreGroup::meet(std::deque<uint32_t>& waiting, uint32_t x,
                                        std::deque<uint32_t>& queue) {
  if (waiting.empty()) {
    queue.push_back(x);
    return std::nullopt;
  }
  const uint32_t other = waiting.front();
  waiting.pop_front();
  return other;
}

void CoreGroup::start(uint32_t from, uint32_t to) {
  const Exchange &s = exchanges_[from], &r = exchanges_[to];
  const isa::AccessPattern &src = s.ins->operands[1], &dst = r.ins->operands[0];
  const bool alike = src.dtype == dst.dtype && src.num_partitions == dst.num_partitions &&
                     src.free_elements() == dst.free_elements();
  if (!alike) {
    const std::string what =
        fmt::format("core {} sends [{}, {}] {} on pipe {}, core {} receives [{}, {}] {}", s.core,
                    src.num_partitions, src.free_elements(), src.dtype.name(), s.ins->p.pipe,
                    r.core, dst.num_partitions, dst.free_elements(), dst.dtype.name());
    fault(s, what);
    fault(r, what);
  }
  const auto tag = static_cast<uint64_t>(transfers_.size());
  transfers_.push_back(Transfer{from, to, alike});
  // The transfer starts when both sides are there: the receiver's dst is ready.
  const Picoseconds t = std::max(s.issued, r.issued);
  members_[static_cast<size_t>(s.core)].timing->dma().submit(*s.ins, *s.plan, {}, s.trigger, s.id,
                                                             t, this, tag);
}

void CoreGroup::dma_done(uint64_t tag, Picoseconds now) {
  const Transfer tr = transfers_[static_cast<size_t>(tag)];
  Exchange &s = exchanges_[tr.from], &r = exchanges_[tr.to];
  core::Executor* from = members_[static_cast<size_t>(s.core)].exec;
  core::Executor* to = members_[static_cast<size_t>(r.core)].exec;
  const isa::AccessPattern &src = s.ins->operands[1], &dst = r.ins->operands[0];
  if (from != nullptr && to != nullptr && tr.alike) {
    std::optional<mem::Fault> f = from->memory().check(src);
    if (!f) f = to->memory().check(dst);
    if (f) {
      fault(s, f->to_string());
    } else {
      std::vector<uint8_t> bytes;
      mem::read_codes(from->memory(), src, bytes);
      mem::write_codes(to->memory(), dst, bytes.data());
    }
  }
  s.sent = true;
  r.received = true;
  finish_if_done(tr.from, now);
  finish_if_done(tr.to, now);
}

void CoreGroup::finish_if_done(uint32_t x, Picoseconds now) {
  const Exchange& e = exchanges_[x];
  if (!e.sent || !e.received) return;
  core::TimingContext& ctx = members_[static_cast<size_t>(e.core)].timing->context();
  ctx.result.dma.finish = std::max(ctx.result.dma.finish, now);
  if (ctx.path != nullptr) ctx.path->on_sendrecv_done(e.path_node, e.signals, now);
  ctx.apply_signals(e.signals, now);
}

void CoreGroup::report_unmatched() {
  for (const Exchange& x : exchanges_) {
    if (x.sent && x.received) continue;
    const char* missing = !x.sent && !x.received ? "send and receive"
                          : !x.sent              ? "send"
                                                 : "receive";
    fault(x, fmt::format("its {} never met a sendrecv of core {} on pipe {}", missing,
                         !x.sent ? x.ins->p.send_to : x.ins->p.recv_from, x.ins->p.pipe));
  }
}

}  // namespace trnsim::chip
