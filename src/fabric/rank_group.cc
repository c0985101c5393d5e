#include "fabric/rank_group.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "base/error.h"
#include "fabric/rank_codes.h"
#include "isa/names.h"
#include "mem/tile_io.h"

namespace trnsim::fabric {

namespace {

constexpr uint32_t kMeetingEnd = 1;

using isa::CollectiveKind;
using namespace rank_codes;  // NOLINT(google-build-using-namespace): this layer's own helpers

Op fabric_op(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return Op::kAllReduce;
    case CollectiveKind::kAllGather:
      return Op::kAllGather;
    case CollectiveKind::kReduceScatter:
      return Op::kReduceScatter;
    case CollectiveKind::kAllToAll:
      return Op::kAllToAll;
    case CollectiveKind::kPermute:
      return Op::kPermute;
    case CollectiveKind::kAllToAllV:  // priced by price_v (rank_group_v.cc), not here
      return Op::kAllToAllV;
    case CollectiveKind::kAllGatherV:
      return Op::kAllGather;
  }
  return Op::kAllReduce;
}

}  // namespace

RankGroup::RankGroup(const SystemSpec& system, const RuntimeSpec& runtime, ReplicaGroups groups,
                     int ranks, int lnc, sim::Simulator& sim)
    : system_(system),
      runtime_(runtime),
      groups_(std::move(groups)),
      lnc_(std::max(lnc, 1)),
      sim_(sim),
      members_(static_cast<size_t>(std::max(ranks, 1) * std::max(lnc, 1))),
      order_(members_.size()) {}

RankGroup::~RankGroup() = default;

void RankGroup::attach(int core, core::CoreTiming& timing, core::Executor* exec) {
  members_.at(static_cast<size_t>(core)) = Member{&timing, exec};
}

void RankGroup::barrier(int, core::Sequencer& seq, Picoseconds t) { seq.release_barrier(t); }

void RankGroup::sendrecv(int core, const isa::Instruction& ins, const core::DmaPlan&,
                         std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                         Picoseconds t) {
  core::TimingContext& ctx = members_[static_cast<size_t>(core)].timing->context();
  ctx.fault(mem::FaultKind::kPeer, ins, trigger, id,
            "sendrecv between ranks: a rank is a logical core of one physical core, with no "
            "peer core; ranks exchange data by collectives");
  ctx.apply_signals(signals, t);
}

const std::vector<int>* RankGroup::list_of(int group, int rank) const {
  if (group < 0 || static_cast<size_t>(group) >= groups_.size()) return nullptr;
  for (const std::vector<int>& list : groups_[static_cast<size_t>(group)])
    if (std::find(list.begin(), list.end(), rank) != list.end()) return &list;
  return nullptr;
}

void RankGroup::fault(const Arrival& a, const std::string& message) {
  core::TimingContext& ctx = members_[static_cast<size_t>(a.core)].timing->context();
  ctx.fault(mem::FaultKind::kPeer, *a.ins, a.trigger, a.id, message);
}

void RankGroup::complete(size_t t, Picoseconds now) {
  tickets_[t].done = true;
  std::deque<size_t>& order = order_[static_cast<size_t>(tickets_[t].a.core)];
  while (!order.empty() && tickets_[order.front()].done) {
    apply(tickets_[order.front()], now);
    order.pop_front();
  }
}

void RankGroup::apply(Ticket& t, Picoseconds now) {
  const Arrival& a = t.a;
  core::Executor* ex = members_[static_cast<size_t>(a.core)].exec;
  if (ex != nullptr && !t.result.empty())
    mem::write_codes(ex->memory(), dst_of(*a.ins), t.result.data());
  if (ex != nullptr && !t.meta.empty())
    mem::write_codes(ex->memory(), meta_of(*a.ins), t.meta.data());
  t.meta = {};
  if (ex != nullptr && t.copy) {
    std::vector<uint8_t> bytes;
    mem::read_codes(ex->memory(), src_of(*a.ins), bytes);
    mem::write_codes(ex->memory(), dst_of(*a.ins), bytes.data());
  }
  t.result = {};
  core::TimingContext& ctx = members_[static_cast<size_t>(a.core)].timing->context();
  ctx.result.dma.finish = std::max(ctx.result.dma.finish, now);
  if (ctx.path != nullptr) ctx.path->on_sendrecv_done(a.path_node, a.signals, now);
  ctx.apply_signals(a.signals, now);
}

void RankGroup::collective(int core, const isa::Instruction& ins, const core::DmaPlan& plan,
                           std::span<const isa::SemSignal> signals, isa::Engine trigger,
                           uint64_t id, Picoseconds t) {
  const size_t ticket = tickets_.size();
  Ticket arrived;
  arrived.a = Arrival{core, &ins, &plan, signals, trigger, id, t};
  tickets_.push_back(std::move(arrived));
  order_[static_cast<size_t>(core)].push_back(ticket);
  Arrival& a = tickets_.back().a;
  // The sequencer recorded the collective's node just before handing it over.
  if (const core::TimingPath* path = members_[static_cast<size_t>(core)].timing->context().path)
    a.path_node = path->last_node(trigger);
  const int group = ins.p.replica_group;
  const std::vector<int>* list = list_of(group, rank_of(core));
  if (list == nullptr) {
    fault(a,
          static_cast<size_t>(group) < groups_.size()
              ? fmt::format("rank {} is in no rank list of replica group {}", rank_of(core), group)
              : fmt::format("replica group {} does not exist (the run has {})", group,
                            groups_.size()));
    complete(ticket, t);
    return;
  }
  if (list->size() == 1 && lnc_ == 1) {  // a list of one: a copy on the rank's DMA queues
    members_[static_cast<size_t>(core)].timing->dma().submit(ins, plan, {}, trigger, id, t, this,
                                                             ticket);
    return;
  }
  // Every physical core of every rank of the list, in list order.
  waiting_[{group, core}].push_back(ticket);
  std::vector<int> cores;
  for (int r : *list)
    for (int k = 0; k < lnc_; ++k) cores.push_back(r * lnc_ + k);
  for (int c : cores)
    if (waiting_[{group, c}].empty()) return;  // someone has not arrived yet
  std::vector<size_t> met;
  for (int c : cores) {
    std::deque<size_t>& q = waiting_[{group, c}];
    met.push_back(q.front());
    q.pop_front();
  }
  if (list->size() == 1) {  // one rank of several cores: its first core copies, once
    const Arrival& first = tickets_[met[0]].a;
    companions_[met[0]].assign(met.begin() + 1, met.end());
    Picoseconds start = first.issued;
    for (size_t m : met) start = std::max(start, tickets_[m].a.issued);
    members_[static_cast<size_t>(first.core)].timing->dma().submit(
        *first.ins, *first.plan, {}, first.trigger, first.id, start, this, met[0]);
    return;
  }
  meet(met);
}

Fabric& RankGroup::fabric(int64_t ranks) {
  std::unique_ptr<Fabric>& f = fabrics_[ranks];
  if (!f)
    f = std::make_unique<Fabric>(system_, runtime_, Placement{RankUnit::kCore, ranks, lnc_, 0});
  return *f;
}

Picoseconds RankGroup::price(const std::vector<Arrival>& m) {
  const isa::Instruction& in = *m[0].ins;
  const auto n = static_cast<int64_t>(m.size());
  const num::Format dtype = src_of(in).dtype;
  const int64_t src_bytes = src_of(in).elements() * dtype.storage_bytes;
  // nccom-test's sizes: the gathered tensor for all-gather, a rank's buffer otherwise.
  const int64_t bytes = in.p.collective == CollectiveKind::kAllGather ? n * src_bytes : src_bytes;
  CollectiveRequest req;
  req.op = fabric_op(in.p.collective);
  req.bytes = bytes;
  req.dtype = dtype;
  req.placement = Placement{RankUnit::kCore, n, lnc_, 0};
  // A permute by its pairs, as positions in the list (no send: itself).
  if (in.p.collective == CollectiveKind::kPermute)
    for (int32_t i = 0; i < static_cast<int32_t>(n); ++i) {
      int32_t to = i;
      for (int32_t j = 0; j < static_cast<int32_t>(n); ++j)
        if (rank_of(m[static_cast<size_t>(j)].core) == m[static_cast<size_t>(i)].ins->p.send_to)
          to = j;
      req.perm.push_back(to);
    }
  const auto key = std::make_tuple(static_cast<int>(in.p.collective), n, bytes,
                                   std::string(dtype.name()), req.perm);
  if (auto it = prices_.find(key); it != prices_.end()) return it->second;
  const Picoseconds t = fabric(n).simulate(req).device;
  prices_.emplace(key, t);
  return t;
}

void RankGroup::meet(const std::vector<size_t>& tickets) {
  std::vector<Arrival> members;
  for (size_t t : tickets) members.push_back(tickets_[t].a);
  Picoseconds start = members[0].issued;
  for (const Arrival& a : members) start = std::max(start, a.issued);
  std::string why = mismatch(members);
  // One arrival per rank, its first core's: a rank's cores share its HBM, which is written once.
  std::vector<Arrival> ranks;
  for (size_t j = 0; j < members.size(); j += static_cast<size_t>(lnc_))
    ranks.push_back(members[j]);
  Picoseconds end = start;
  if (why.empty()) {
    try {
      const bool values = std::all_of(members.begin(), members.end(), [&](const Arrival& a) {
        return members_[static_cast<size_t>(a.core)].exec != nullptr;
      });
      if (ranks[0].ins->op == isa::Opcode::kCollectiveV) {
        VOutcome v = compute_v(ranks, values, why);
        if (why.empty()) end = start + price_v(ranks, v);
        for (size_t j = 0; j < v.dst.size() && why.empty(); ++j) {
          Ticket& t = tickets_[tickets[j * static_cast<size_t>(lnc_)]];
          t.result = std::move(v.dst[j]);
          t.meta = std::move(v.meta[j]);
        }
      } else {
        end = start + price(ranks);
        if (values) {
          std::vector<std::vector<uint8_t>> results = compute(ranks, why);
          for (size_t j = 0; j < results.size(); ++j)
            tickets_[tickets[j * static_cast<size_t>(lnc_)]].result = std::move(results[j]);
        }
      }
    } catch (const InputError& e) {  // e.g. more ranks than the system has
      why = fmt::format("the fabric cannot run it: {}", e.what());
    }
  }
  if (!why.empty()) {
    for (size_t t : tickets) {
      const Arrival& a = tickets_[t].a;
      fault(a, fmt::format("{} on replica group {}: {}", isa::name_of(a.ins->p.collective),
                           a.ins->p.replica_group, why));
      tickets_[t].result = {};
      tickets_[t].meta = {};
      complete(t, start);
    }
    return;
  }
  const auto index = static_cast<uint64_t>(meetings_.size());
  meetings_.push_back(tickets);
  sim_.schedule(end, this, kMeetingEnd, index, core::kPriorityComplete);
}

void RankGroup::handle(const sim::Event& e) {
  for (size_t t : meetings_[static_cast<size_t>(e.payload)]) complete(t, e.time);
}

void RankGroup::dma_done(uint64_t tag, Picoseconds now) {
  Ticket& t = tickets_[static_cast<size_t>(tag)];
  const Arrival& a = t.a;
  core::Executor* ex = members_[static_cast<size_t>(a.core)].exec;
  const isa::Params& p = a.ins->p;
  if (a.ins->op == isa::Opcode::kCollectiveV) {  // its own chunk, as its metadata says
    std::string why = mismatch_v({a});
    VOutcome v;
    if (why.empty()) v = compute_v({a}, ex != nullptr, why);
    if (!why.empty()) {
      fault(a, fmt::format("{} of one rank: {}", isa::name_of(p.collective), why));
    } else if (!v.dst.empty()) {
      t.result = std::move(v.dst[0]);
      t.meta = std::move(v.meta[0]);
    }
    complete(static_cast<size_t>(tag), now);
    finish_companions(static_cast<size_t>(tag), now);
    return;
  }
  // Alone in its list, every kind gives dst = src; a permute only from itself.
  const int rank = rank_of(a.core);
  const bool moves = p.collective != CollectiveKind::kPermute || p.recv_from == rank;
  if (p.collective == CollectiveKind::kPermute &&
      ((p.send_to >= 0 && p.send_to != rank) || (p.recv_from >= 0 && p.recv_from != rank))) {
    fault(a, fmt::format("permute: rank {} alone in its list sends to {} and receives from {}",
                         rank, p.send_to, p.recv_from));
  } else if (ex != nullptr && moves) {
    const isa::AccessPattern &src = src_of(*a.ins), &dst = dst_of(*a.ins);
    std::optional<mem::Fault> f = ex->memory().check(src);
    if (!f) f = ex->memory().check(dst);
    if (f)
      fault(a, f->to_string());
    else if (src.elements() != dst.elements() || src.dtype != dst.dtype)
      fault(a, fmt::format("{} of one rank: dst has {} elements, src {}",
                           isa::name_of(p.collective), dst.elements(), src.elements()));
    else
      t.copy = true;
  }
  complete(static_cast<size_t>(tag), now);
  finish_companions(static_cast<size_t>(tag), now);
}

void RankGroup::finish_companions(size_t first, Picoseconds now) {
  if (auto it = companions_.find(first); it != companions_.end()) {
    for (size_t c : it->second) complete(c, now);  // the rank's other cores
    companions_.erase(it);
  }
}

void RankGroup::report_unmatched() {
  for (const auto& [key, queue] : waiting_) {
    const std::vector<int>* list = list_of(key.first, rank_of(key.second));
    for (size_t t : queue) {
      std::vector<int> absent;
      for (int r : *list)
        for (int k = 0; k < lnc_; ++k)
          if (auto it = waiting_.find({key.first, r * lnc_ + k});
              it == waiting_.end() || it->second.empty()) {
            absent.push_back(r);
            break;
          }
      const Arrival& a = tickets_[t].a;
      fault(a, fmt::format("{} on replica group {} never met rank(s) {} of its list",
                           isa::name_of(a.ins->p.collective), key.first, fmt::join(absent, ", ")));
    }
  }
}

}  // namespace trnsim::fabric
