#include "core/timing/timing_path.h"

#include <algorithm>

#include "isa/op_table.h"

namespace trnsim::core {

using profile::kNoNode;

const char* path_edge_name(PathEdge e) {
  switch (e) {
    case PathEdge::kStart:
      return "start";
    case PathEdge::kSemaphore:
      return "semaphore";
    case PathEdge::kDma:
      return "dma";
    case PathEdge::kPort:
      return "port";
    case PathEdge::kResult:
      return "result";
    case PathEdge::kUnit:
      return "unit";
    case PathEdge::kIssue:
      return "issue";
    case PathEdge::kTrigger:
      return "trigger";
    case PathEdge::kQueue:
      return "queue";
    case PathEdge::kPeer:
      return "peer";
  }
  return "?";
}

TimingPath::TimingPath(profile::DependencyGraph& graph, const TimingProgram& prog, bool cross)
    : g_(graph),
      prog_(prog),
      cross_(cross),
      sems_(static_cast<size_t>(std::max(prog.num_semaphores(), 0))) {
  uint32_t labels = 0;
  for (isa::Engine e : isa::kAllEngines) {
    base_[static_cast<size_t>(e)] = labels;
    labels += static_cast<uint32_t>(prog.stream(e).size());
  }
  g_.set_labels(labels);
}

void TimingPath::on_issue(isa::Engine e, size_t index, const InstrInfo& info, Picoseconds t0,
                          Picoseconds next_issue, Picoseconds free, Picoseconds retire) {
  const auto ei = static_cast<size_t>(e);
  EngineState& st = engines_[ei];
  // The constraint released last; at a tie the one considered first (cross-engine ones first:
  // they say more about why the engine waited). One released after t0 did not hold it. One
  // that another core let go is kPeer, whatever the local link (issue after a barrier, a
  // semaphore a sendrecv signals).
  Held best;
  PathEdge why = PathEdge::kStart;
  auto consider = [&](const Held& h, PathEdge k) {
    if (h.node != kNoNode && h.until > best.until && h.until <= t0) {
      best = h;
      why = h.peer ? PathEdge::kPeer : k;
    }
  };
  for (const isa::SemWait& w : prog_.waits(info)) {
    const Held h = releaser(w, t0);
    if (h.node != kNoNode)
      consider(h, g_[h.node].lane == kDmaLane ? PathEdge::kDma : PathEdge::kSemaphore);
  }
  for (size_t p = 0; p < ports_.size(); ++p)
    if (((info.ports >> p) & 1u) != 0 && ports_[p].engine != static_cast<int>(ei))
      consider(ports_[p].held, PathEdge::kPort);
  if (info.raw_back != 0 && info.raw_back <= st.issued)
    consider(st.recent[(st.issued - info.raw_back) % kRawWindow], PathEdge::kResult);
  consider(st.unit[static_cast<size_t>(info.cost.unit)], PathEdge::kUnit);
  if (info.cost.waits_background)
    consider(st.unit[static_cast<size_t>(Unit::kBackground)], PathEdge::kUnit);
  consider(st.last, PathEdge::kIssue);

  const uint32_t lbl = label(e, index);
  const uint32_t node = g_.add(profile::DepNode{
      best.until, retire, best.node, lbl, static_cast<uint16_t>(ei), static_cast<uint8_t>(why)});
  g_.add_work(lbl, free - t0);
  st.last = {node, next_issue};
  st.unit[static_cast<size_t>(info.cost.unit)] = {node, free};
  st.recent[st.issued % kRawWindow] = {node, retire};
  ++st.issued;
  for (size_t p = 0; p < ports_.size(); ++p)
    if (((info.ports >> p) & 1u) != 0) ports_[p] = {{node, free}, static_cast<int>(ei)};
  // Signals that apply at retirement; a transfer's apply at its completion (on_dma_done), a
  // barrier's and sendrecv's when the other cores meet them.
  const bool later = isa::is_peer_transfer(info.op)
                         ? cross_
                         : info.dma || (cross_ && info.op == isa::Opcode::kCoreBarrier);
  if (!later)
    for (const isa::SemSignal& s : prog_.signals(info)) signal(s, retire, node);
}

void TimingPath::on_barrier_release(isa::Engine e, std::span<const isa::SemSignal> signals,
                                    Picoseconds now) {
  EngineState& st = engines_[static_cast<size_t>(e)];
  if (st.last.node == kNoNode) return;
  profile::DepNode& d = g_[st.last.node];
  // d.end is still the barrier's arrival (its retirement).
  const bool peer = now > d.end;
  d.end = std::max(d.end, now);
  st.last.until = std::max(st.last.until, now);
  st.last.peer = peer;
  for (const isa::SemSignal& s : signals) signal(s, now, st.last.node, peer);
}

void TimingPath::on_sendrecv_done(uint32_t node, std::span<const isa::SemSignal> signals,
                                  Picoseconds now) {
  if (node == kNoNode) return;
  profile::DepNode& d = g_[node];
  d.end = std::max(d.end, now);
  for (const isa::SemSignal& s : signals) signal(s, now, node, true);
}

uint32_t TimingPath::on_dma_submit(isa::Engine trigger, Picoseconds t) {
  const Held& last = engines_[static_cast<size_t>(trigger)].last;
  const uint32_t lbl = last.node != kNoNode ? g_[last.node].label : 0;
  return g_.add(profile::DepNode{t, t, last.node, lbl, static_cast<uint16_t>(kDmaLane),
                                 static_cast<uint8_t>(PathEdge::kTrigger)});
}

void TimingPath::on_piece_done(int engine, uint32_t node) {
  const auto e = static_cast<size_t>(engine);
  if (e >= dma_last_.size()) dma_last_.resize(e + 1, kNoNode);
  dma_last_[e] = node;
}

void TimingPath::on_dma_done(uint32_t node, uint32_t behind, Picoseconds started, Picoseconds now,
                             std::span<const isa::SemSignal> signals) {
  profile::DepNode& d = g_[node];
  d.end = now;
  // Queued behind an earlier transfer: that one, when the engine took this piece, released it
  // last (a later submission is not followed, so the walk only goes back).
  if (behind != kNoNode && behind < node) {
    d.pred = behind;
    d.release = started;
    d.edge = static_cast<uint8_t>(PathEdge::kQueue);
  }
  for (const isa::SemSignal& s : signals) signal(s, now, node);
}

void TimingPath::signal(const isa::SemSignal& s, Picoseconds t, uint32_t node, bool peer) {
  if (s.sem >= sems_.size()) return;
  std::vector<SemEvent>& h = sems_[s.sem];
  // By time; signals arrive nearly in time order, so this is nearly always an append.
  auto pos = h.end();
  while (pos != h.begin() && (pos - 1)->t > t) --pos;
  const int64_t before = pos == h.begin() ? 0 : (pos - 1)->value;
  pos = h.insert(pos, SemEvent{t, before + s.delta, node, peer});
  for (++pos; pos != h.end(); ++pos) pos->value += s.delta;
}

TimingPath::Held TimingPath::releaser(const isa::SemWait& w, Picoseconds now) const {
  if (w.sem >= sems_.size() || w.value <= 0) return {};  // held from the start
  const std::vector<SemEvent>& h = sems_[w.sem];
  const auto upto = std::upper_bound(h.begin(), h.end(), now,
                                     [](Picoseconds t, const SemEvent& ev) { return t < ev.t; });
  if (prog_.semaphores_monotone()) {
    // Counters only rise: the first signal that brought it to the value.
    const auto it = std::lower_bound(h.begin(), upto, w.value,
                                     [](const SemEvent& ev, int64_t v) { return ev.value < v; });
    return it == upto ? Held{} : Held{it->node, it->t, it->peer};
  }
  // Counters may fall: the latest signal that lifted it from short to the value. A wait met
  // long ago (many signals back) did not hold the instruction: not looked for.
  constexpr int kLookBack = 256;
  int steps = 0;
  for (auto it = upto; it != h.begin() && steps < kLookBack; --it, ++steps) {
    const SemEvent& ev = *(it - 1);
    const int64_t before = it - 1 == h.begin() ? 0 : (it - 2)->value;
    if (ev.value >= w.value && before < w.value) return {ev.node, ev.t, ev.peer};
  }
  return {};
}

}  // namespace trnsim::core
