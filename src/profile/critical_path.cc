#include "profile/critical_path.h"

#include <algorithm>
#include <unordered_map>

#include "base/error.h"

namespace trnsim::profile {

uint32_t DependencyGraph::add(const DepNode& n) {
  if (nodes_.size() >= kNoNode)
    throw InputError("profile", "critical path",
                     "the run has more than 2^32 instructions and transfers to follow");
  nodes_.push_back(n);
  return static_cast<uint32_t>(nodes_.size() - 1);
}

CriticalPath critical_path(const DependencyGraph& g, size_t lanes, size_t edges, size_t top) {
  CriticalPath p;
  p.per_lane.assign(std::max<size_t>(lanes, 1), Picoseconds(0));
  p.edges.assign(std::max<size_t>(edges, 1), 0);
  if (g.size() == 0) return p;
  uint32_t last = 0;
  for (uint32_t i = 1; i < g.size(); ++i)
    if (g[i].end > g[last].end) last = i;
  // Preds point at earlier nodes, so the walk ends.
  for (uint32_t n = last; n != kNoNode; n = g[n].pred) {
    p.nodes.push_back(n);
    if (g[n].pred != kNoNode && g[n].pred >= n) break;  // a feeder's bug must not loop forever
  }
  std::reverse(p.nodes.begin(), p.nodes.end());
  p.length = p.nodes.size();
  p.time = g[last].end;

  // By (lane, label): a DMA transfer shares its trigger instruction's label.
  std::unordered_map<uint64_t, CriticalPath::Item> by_label;
  auto key = [](const DepNode& d) { return (uint64_t{d.lane} << 32) | d.label; };
  Picoseconds cursor = p.time;  // walking back: the start of the later node's share
  for (auto it = p.nodes.rbegin(); it != p.nodes.rend(); ++it) {
    const DepNode& d = g[*it];
    // A release after the later node's (a queued transfer's piece) owns nothing, not less.
    const Picoseconds from = std::clamp(d.release, Picoseconds(0), cursor);
    const Picoseconds share = cursor - from;
    cursor = from;
    p.per_lane[std::min<size_t>(d.lane, p.per_lane.size() - 1)] += share;
    ++p.edges[std::min<size_t>(d.edge, p.edges.size() - 1)];
    CriticalPath::Item& item = by_label[key(d)];
    item.label = d.label;
    item.lane = d.lane;
    ++item.count;
    item.time += share;
  }
  // Time before the first node was released: nothing held it, so its own lane's.
  p.per_lane[std::min<size_t>(g[p.nodes.front()].lane, p.per_lane.size() - 1)] += cursor;
  by_label[key(g[p.nodes.front()])].time += cursor;

  for (const auto& [k, item] : by_label) p.top.push_back(item);
  std::sort(p.top.begin(), p.top.end(), [](const auto& a, const auto& b) {
    if (a.time != b.time) return a.time > b.time;
    if (a.lane != b.lane) return a.lane < b.lane;
    return a.label < b.label;
  });
  if (p.top.size() > top) p.top.resize(top);
  return p;
}

}  // namespace trnsim::profile
