#include "core/race/race_order.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "base/error.h"
#include "core/control/control_flow.h"
#include "core/cost/cost.h"
#include "isa/dma_span.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {

constexpr uint32_t kBackgroundAgent = isa::kNumEngines;  // agents 0..4 are the engines
constexpr size_t kStreamChains = isa::kNumEngines;       // chains 0..4 hold the issues

uint32_t issue_event(size_t n) { return static_cast<uint32_t>(2 * n); }
uint32_t completion_event(size_t n) { return static_cast<uint32_t>(2 * n + 1); }

// The barrier kinds, declared once: what each orders (race_order.h).
struct BarrierRule {
  std::string_view name;
  DmaWriteOrder order;
};
constexpr std::array<BarrierRule, 2> kBarrierRules{{
    {"write-after-write", {true, true, false}},
    {"strong-order-write", {true, true, true}},
}};

}  // namespace

bool DmaWriteOrder::orders(FindingKind race) const {
  switch (race) {
    case FindingKind::kWriteAfterWrite:
      return write_after_write;
    case FindingKind::kWriteAfterRead:
      return write_after_read;
    case FindingKind::kReadAfterWrite:
      return read_after_write;
    default:
      return false;
  }
}

DmaWriteOrder dma_write_order(const arch::DmaSpec& dma) {
  for (const BarrierRule& r : kBarrierRules)
    if (r.name == dma.write_barrier) return r.order;
  throw InputError("core.dma.write_barrier", dma.write_barrier,
                   "the race checker knows write-after-write and strong-order-write");
}

std::string Agent::label() const {
  if (background) return "pe-background";
  if (!dma) return std::string(isa::engine_name(stream));
  return fmt::format("dma queue {} from {} on engine group {} ({} engines)", queue,
                     isa::engine_name(stream), first_group, engines);
}

HappensBefore::HappensBefore(const isa::Program& prog, const arch::CoreSpec& core, size_t limit)
    : prog_(prog), core_(core) {
  for (isa::Engine e : isa::kAllEngines) agents_.push_back({false, false, e});
  agents_.push_back({false, true, isa::Engine::kTensor});
  std::vector<int64_t> last_of_agent;  // per agent: its latest node so far (-1: none)
  for (isa::Engine e : isa::kAllEngines) {
    const auto& stream = prog.stream(e);
    const ExecutionOrder order = execution_order(stream, limit - executed_ + 1);
    executed_ += order.indices.size();
    if (!order.complete || executed_ > limit) {
      too_big_ = true;
      data_dependent_ = order.data_dependent;
      return;
    }
    std::vector<int64_t> seen(stream.size(), 0);
    for (size_t pos = 0; pos < order.indices.size(); ++pos) {
      const auto index = static_cast<size_t>(order.indices[pos]);
      const uint32_t a = agent_of(stream[index], e);
      last_of_agent.resize(agents_.size(), -1);
      const int64_t prev = last_of_agent[a];
      const size_t n = nodes_.size();
      const uint32_t rank = prev < 0 ? 0 : nodes_[static_cast<size_t>(prev)].rank + 1;
      nodes_.push_back({e, order.indices[pos], seen[index]++, static_cast<uint32_t>(pos), a, rank});
      edges_.push_back({issue_event(n), completion_event(n), -1});
      if (pos > 0) edges_.push_back({issue_event(n - 1), issue_event(n), -1});  // in-order issue
      if (prev >= 0)  // in-order completion per agent
        edges_.push_back({completion_event(static_cast<size_t>(prev)), completion_event(n), -1});
      last_of_agent[a] = static_cast<int64_t>(n);
    }
  }
}

uint32_t HappensBefore::agent_of(const isa::Instruction& in, isa::Engine stream) {
  if (in.op == isa::Opcode::kLoadStationary) return kBackgroundAgent;
  if (!isa::is_dma(in.op) || in.num_operands < 2) return static_cast<uint32_t>(stream);
  // The side that decides how the transfer spreads over the DMA engines (core/dma/dma_plan.h).
  const isa::AccessPattern &d = in.operands[0], &s = in.operands[1];
  const isa::AccessPattern& split = d.space != isa::Space::kHbm   ? d
                                    : s.space != isa::Space::kHbm ? s
                                                                  : d;
  // Transfers of one queue on the same DMA engines complete in order, whatever partitions
  // they move (the kernel builder's sync resolver relies on the same).
  const isa::DmaEngineSpan span = isa::dma_engine_span(
      split.space == isa::Space::kHbm, split.start_partition, split.num_partitions, core_);
  const Agent key{true,
                  false,
                  stream,
                  in.p.dma_queue,
                  static_cast<int32_t>(span.first_group),
                  static_cast<int32_t>(span.pieces)};
  const auto same = [&](const Agent& a) {
    return a.dma && std::tie(a.stream, a.queue, a.first_group, a.engines) ==
                        std::tie(key.stream, key.queue, key.first_group, key.engines);
  };
  const auto it = std::find_if(agents_.begin(), agents_.end(), same);
  if (it != agents_.end()) return static_cast<uint32_t>(it - agents_.begin());
  agents_.push_back(key);
  return static_cast<uint32_t>(agents_.size() - 1);
}

const isa::Instruction& HappensBefore::instruction(size_t node) const {
  const ExecNode& n = nodes_[node];
  return prog_.stream(n.stream)[static_cast<size_t>(n.index)];
}

std::vector<SyncProblem> HappensBefore::resolve() {
  std::vector<SyncProblem> problems;
  add_sem_edges(problems);
  order(problems);
  return problems;
}

void HappensBefore::add_sem_edges(std::vector<SyncProblem>& problems) {
  struct Signal {
    size_t node;
    int64_t running;  // the agent's signals of the semaphore so far, this one included
  };
  struct Semaphore {
    std::map<uint32_t, std::vector<Signal>> by_agent;  // each in completion order
    bool decrements = false, reported = false;
  };
  std::map<int32_t, Semaphore> sems;
  for (size_t n = 0; n < nodes_.size(); ++n)
    for (const isa::SemSignal& s : instruction(n).signals) {
      if (s.delta == 0) continue;
      Semaphore& sem = sems[s.sem];
      auto& list = sem.by_agent[nodes_[n].agent];
      list.push_back({n, (list.empty() ? 0 : list.back().running) + s.delta});
      sem.decrements |= s.delta < 0;
    }
  const auto name = [&](size_t n) {
    return fmt::format("{}[{}]", isa::engine_name(nodes_[n].stream), nodes_[n].index);
  };
  for (size_t n = 0; n < nodes_.size(); ++n)
    for (const isa::SemWait& w : instruction(n).waits) {
      if (w.value <= 0) continue;  // holds from the start (semaphores start at 0)
      const auto add = [&](size_t signaller) {
        edges_.push_back({completion_event(signaller), issue_event(n), w.sem});
      };
      const auto unsatisfiable = [&](std::string why) {
        problems.push_back({FindingKind::kUnsatisfiableWait, static_cast<int64_t>(n), -1, w.sem,
                            fmt::format("waits for s{} >= {}; {}", w.sem, w.value, why)});
      };
      const auto it = sems.find(w.sem);
      if (it == sems.end()) {
        unsatisfiable("nothing signals it");
        continue;
      }
      Semaphore& sem = it->second;
      if (sem.decrements && sem.by_agent.size() > 1) {
        // The counter goes up and down in an order nobody knows: no signal is implied.
        if (!sem.reported) {
          const auto first = sem.by_agent.begin(), second = std::next(first);
          problems.push_back({FindingKind::kMultipleSignallers,
                              static_cast<int64_t>(first->second.front().node),
                              static_cast<int64_t>(second->second.front().node), w.sem,
                              fmt::format("s{} goes down and {} agents signal it, so its waits "
                                          "(first: {}) order nothing",
                                          w.sem, sem.by_agent.size(), name(n))});
          sem.reported = true;
        }
        continue;
      }
      if (sem.decrements) {  // one agent: the counter takes its running sums in order
        const auto& list = sem.by_agent.begin()->second;
        const auto k = std::find_if(list.begin(), list.end(),
                                    [&](const Signal& s) { return s.running >= w.value; });
        if (k == list.end())
          unsatisfiable("its signals never bring it that high");
        else
          add(k->node);
        continue;
      }
      int64_t total = 0;
      for (const auto& [a, list] : sem.by_agent) total += list.back().running;
      if (total < w.value) {
        unsatisfiable(fmt::format("its signals add {} in all", total));
        continue;
      }
      // Agent A must have added at least what the others cannot make up.
      for (const auto& [a, list] : sem.by_agent) {
        const int64_t need = w.value - (total - list.back().running);
        if (need <= 0) continue;
        add(std::lower_bound(list.begin(), list.end(), need, [](const Signal& s, int64_t v) {
              return s.running < v;
            })->node);
      }
    }
}

size_t HappensBefore::chain_of(uint32_t event) const {
  const ExecNode& n = nodes_[event / 2];
  return event % 2 == 0 ? static_cast<size_t>(n.stream) : kStreamChains + n.agent;
}

uint32_t HappensBefore::place_of(uint32_t event) const {
  const ExecNode& n = nodes_[event / 2];
  return event % 2 == 0 ? n.pos : n.rank;
}

bool HappensBefore::order(std::vector<SyncProblem>& problems) {
  const size_t events = 2 * nodes_.size();
  // Predecessor lists, compressed (CSR).
  std::vector<uint32_t>&first = pred_first_, &preds = preds_, indeg(events, 0);
  first.assign(events + 1, 0);
  preds.assign(edges_.size(), 0);
  for (const Edge& e : edges_) ++first[e.to + 1];
  for (size_t v = 0; v < events; ++v) first[v + 1] += first[v];
  std::vector<uint32_t> fill(first.begin(), first.end() - 1);
  std::vector<std::vector<uint32_t>> succs(events);
  for (const Edge& e : edges_) {
    preds[fill[e.to]++] = e.from;
    succs[e.from].push_back(e.to);
    ++indeg[e.to];
  }
  std::vector<uint32_t> topo;  // Kahn; what is left over lies on or after a cycle
  topo.reserve(events);
  for (uint32_t v = 0; v < events; ++v)
    if (indeg[v] == 0) topo.push_back(v);
  for (size_t i = 0; i < topo.size(); ++i)
    for (uint32_t v : succs[topo[i]])
      if (--indeg[v] == 0) topo.push_back(v);
  if (topo.size() != events) {
    problems.push_back(cycle(indeg));
    return false;
  }
  chains_ = kStreamChains + agents_.size();
  clocks_.assign(events * chains_, -1);
  for (uint32_t v : topo) {
    int32_t* row = &clocks_[v * chains_];
    for (uint32_t k = first[v]; k < first[v + 1]; ++k) {
      const int32_t* from = &clocks_[preds[k] * chains_];
      for (size_t c = 0; c < chains_; ++c) row[c] = std::max(row[c], from[c]);
    }
    row[chain_of(v)] = static_cast<int32_t>(place_of(v));
  }
  return true;
}

SyncProblem HappensBefore::cycle(const std::vector<uint32_t>& indeg) const {
  // Walk back along unfinished predecessors from the first stuck event until one repeats.
  std::vector<int64_t> step(indeg.size(), -1);
  std::vector<uint32_t> path;
  auto v = static_cast<uint32_t>(
      std::find_if(indeg.begin(), indeg.end(), [](uint32_t d) { return d > 0; }) - indeg.begin());
  while (step[v] < 0) {
    step[v] = static_cast<int64_t>(path.size());
    path.push_back(v);
    for (uint32_t k = pred_first_[v]; k < pred_first_[v + 1]; ++k)
      if (indeg[preds_[k]] > 0) {
        v = preds_[k];
        break;
      }
  }
  // Edges of the cycle in time order: v -> path.back() -> ... -> path[step[v]] == v.
  std::vector<std::pair<uint32_t, uint32_t>> cyc{{v, path.back()}};
  for (size_t i = path.size() - 1; i > static_cast<size_t>(step[v]); --i)
    cyc.push_back({path[i], path[i - 1]});
  SyncProblem p;  // kDeadlock
  std::vector<std::string> waits;
  const auto name = [&](uint32_t event) {
    const ExecNode& n = nodes_[event / 2];
    return fmt::format("{}[{}]", isa::engine_name(n.stream), n.index);
  };
  for (const auto& [from, to] : cyc)
    for (const Edge& e : edges_)
      if (e.sem >= 0 && e.from == from && e.to == to) {
        if (p.first < 0) {
          p.first = to / 2;
          p.second = from / 2;
          p.semaphore = e.sem;
        }
        waits.push_back(fmt::format("{} waits on s{} for {}", name(to), e.sem, name(from)));
        break;
      }
  p.detail = fmt::format("the waits form a cycle: {}", fmt::join(waits, ", "));
  return p;
}

bool HappensBefore::completes_before_issue(size_t x, size_t y) const {
  const size_t chain = kStreamChains + nodes_[x].agent;
  return clocks_[issue_event(y) * chains_ + chain] >= static_cast<int32_t>(nodes_[x].rank);
}

bool HappensBefore::issues_before(size_t x, size_t y) const {
  const size_t chain = static_cast<size_t>(nodes_[x].stream);
  return clocks_[issue_event(y) * chains_ + chain] >= static_cast<int32_t>(nodes_[x].pos);
}

}  // namespace trnsim::core
