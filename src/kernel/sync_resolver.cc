#include "kernel/sync_resolver.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"

namespace trnsim::kernel {

namespace {

int32_t known(const std::vector<int32_t>& k, int32_t agent) {
  return static_cast<size_t>(agent) < k.size() ? k[static_cast<size_t>(agent)] : -1;
}

void raise(std::vector<int32_t>& k, size_t agent, int32_t seq) {
  if (agent >= k.size()) k.resize(agent + 1, -1);
  k[agent] = std::max(k[agent], seq);
}

}  // namespace

std::string AgentInfo::label() const {
  if (background) return "pe (load_stationary unit)";
  if (!dma) return std::string(isa::engine_name(engine));
  if (peer)
    return fmt::format("sendrecv / collective completions of dma queue {} (triggered by {})", queue,
                       isa::engine_name(engine));
  return fmt::format("dma queue {} (triggered by {}, engine group {}, {} engines)", queue,
                     isa::engine_name(engine), first_group, engines);
}

SyncResolver::SyncResolver() {
  for (isa::Engine e : isa::kAllEngines) agents_.push_back({false, false, e});
  agents_.push_back({false, true, isa::Engine::kTensor});  // kPeBackground
  instrs_.resize(agents_.size());
  known_at_.resize(agents_.size());
  for (auto& k : stream_known_) k = std::make_shared<const Knowledge>();
}

int32_t SyncResolver::dma_agent(isa::Engine trigger, int32_t queue, int32_t first_group,
                                int32_t engines, bool peer) {
  for (size_t a = 0; a < agents_.size(); ++a) {
    const AgentInfo& x = agents_[a];
    if (x.dma && x.engine == trigger && x.queue == queue && x.first_group == first_group &&
        x.engines == engines && x.peer == peer)
      return static_cast<int32_t>(a);
  }
  agents_.push_back({true, false, trigger, queue, first_group, engines, peer});
  instrs_.emplace_back();
  known_at_.emplace_back();
  return static_cast<int32_t>(agents_.size() - 1);
}

AgentSeq SyncResolver::add(int32_t agent, isa::Engine stream, InstrRef ref,
                           std::vector<AgentSeq> deps) {
  const bool self_ordered = !agents_[static_cast<size_t>(agent)].dma;
  // One dependency per agent, the latest: agents complete in order.
  std::sort(deps.begin(), deps.end(), [](const AgentSeq& a, const AgentSeq& b) {
    return a.agent != b.agent ? a.agent < b.agent : a.seq > b.seq;
  });
  auto& sk = stream_known_[static_cast<size_t>(stream)];
  std::shared_ptr<Knowledge> next;  // copied on the first wait
  int32_t last_agent = -1;
  for (const AgentSeq& d : deps) {
    if (d.agent == last_agent) continue;
    last_agent = d.agent;
    if (d.agent == agent && self_ordered) continue;
    const Knowledge& cur = next ? *next : *sk;
    if (known(cur, d.agent) >= d.seq) {
      ++stats_.pruned;
      continue;
    }
    if (!next) next = std::make_shared<Knowledge>(*sk);
    waits_.push_back({ref, d});
    ++stats_.waits;
    raise(*next, static_cast<size_t>(d.agent), d.seq);
    // What the producer's stream knew when it issued holds once it has completed.
    const Knowledge& theirs = *known_at_[static_cast<size_t>(d.agent)][static_cast<size_t>(d.seq)];
    for (size_t x = 0; x < theirs.size(); ++x) raise(*next, x, theirs[x]);
  }
  if (next) sk = std::move(next);
  auto& seqs = instrs_[static_cast<size_t>(agent)];
  const AgentSeq me{agent, static_cast<int32_t>(seqs.size())};
  seqs.push_back(ref);
  known_at_[static_cast<size_t>(agent)].push_back(sk);
  return me;
}

std::vector<AgentSeq> SyncResolver::latest() const {
  std::vector<AgentSeq> out;
  for (size_t a = 0; a < instrs_.size(); ++a)
    if (!instrs_[a].empty())
      out.push_back({static_cast<int32_t>(a), static_cast<int32_t>(instrs_[a].size() - 1)});
  return out;
}

void SyncResolver::finalize(isa::Program& prog) {
  // The instructions somebody waits for, per agent, in order: they signal.
  std::vector<std::vector<int32_t>> needed(agents_.size());
  for (const PendingWait& w : waits_) needed[static_cast<size_t>(w.on.agent)].push_back(w.on.seq);
  std::vector<int32_t> sem(agents_.size(), -1);
  int32_t sems = 0;
  for (size_t a = 0; a < agents_.size(); ++a) {
    auto& n = needed[a];
    std::sort(n.begin(), n.end());
    n.erase(std::unique(n.begin(), n.end()), n.end());
    if (n.empty()) continue;
    sem[a] = sems++;
    for (int32_t seq : n) {
      const InstrRef r = instrs_[a][static_cast<size_t>(seq)];
      prog.stream(r.stream)[static_cast<size_t>(r.index)].signals.push_back(
          {static_cast<uint16_t>(sem[a]), 1});
      ++stats_.signals;
    }
  }
  if (sems > isa::kMaxSemaphores)
    throw InputError("kernel build", "semaphores",
                     fmt::format("the kernel needs {} semaphores (one per engine and DMA queue "
                                 "that others wait for); a core has {}",
                                 sems, isa::kMaxSemaphores));
  for (const PendingWait& w : waits_) {
    const auto& n = needed[static_cast<size_t>(w.on.agent)];
    const auto rank = std::lower_bound(n.begin(), n.end(), w.on.seq) - n.begin() + 1;
    prog.stream(w.at.stream)[static_cast<size_t>(w.at.index)].waits.push_back(
        {static_cast<uint16_t>(sem[static_cast<size_t>(w.on.agent)]), rank});
  }
  prog.num_semaphores = sems;
  stats_.semaphores = sems;
  stats_.agents = static_cast<int32_t>(agents_.size());
}

}  // namespace trnsim::kernel
