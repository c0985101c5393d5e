// The critical path of a run: the chain of work that sets its end time. A simulated component
// records one node per piece of work (an executed instruction, a DMA transfer) with the node
// that released it, the last constraint it waited for, and when; the path is the chain found by
// walking back from the node that ended last. Like the trace recorder (trace.h) this knows
// nothing of what it records: a node's lane (where the work ran: an engine, the DMA queues),
// label (what it was: a static instruction) and edge (how its predecessor held it) are numbers
// the feeder names (core/timing/timing_path.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/units.h"

namespace trnsim::profile {

inline constexpr uint32_t kNoNode = UINT32_MAX;

struct DepNode {
  Picoseconds release;      // when `pred` let this node go (0 for a node nothing held)
  Picoseconds end;          // when its work completed
  uint32_t pred = kNoNode;  // the node that released it; always an earlier node (smaller index)
  uint32_t label = 0;
  uint16_t lane = 0;
  uint8_t edge = 0;
};

// Executions and busy time (datapath occupancy) of one label, summed over the run.
struct LabelWork {
  uint64_t count = 0;
  Picoseconds busy;
};

class DependencyGraph {
 public:
  // Labels 0 .. labels - 1 (the feeder's static instructions), each with its work.
  void set_labels(size_t labels) { work_.assign(labels, LabelWork{}); }
  // Returns the new node's index. Throws InputError past 2^32 - 1 nodes (a run too long to
  // profile).
  uint32_t add(const DepNode& n);
  DepNode& operator[](uint32_t i) { return nodes_[i]; }
  const DepNode& operator[](uint32_t i) const { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  const std::vector<DepNode>& nodes() const { return nodes_; }

  void add_work(uint32_t label, Picoseconds busy) {
    LabelWork& w = work_[label];
    ++w.count;
    w.busy += busy;
  }
  const std::vector<LabelWork>& work() const { return work_; }

 private:
  std::vector<DepNode> nodes_;
  std::vector<LabelWork> work_;
};

struct CriticalPath {
  // One label's share of the path: how many of its executions are on it, and their time.
  struct Item {
    uint32_t label = 0;
    uint16_t lane = 0;
    uint64_t count = 0;
    Picoseconds time;
  };
  uint64_t length = 0;  // nodes on the path
  Picoseconds time;     // the end of its last node (the run's end)
  // Each node on the path owns the time from its release to the release of the node after it
  // (the last one: to its end), so the shares add up to `time`.
  std::vector<Picoseconds> per_lane;  // by lane
  std::vector<uint64_t> edges;        // nodes on the path by the edge that led into them
  std::vector<Item> top;              // labels by time on the path, longest first
  std::vector<uint32_t> nodes;        // the path, first node to last
};

// The path ending at the node that ends last (the earliest such node at a tie). `lanes` and
// `edges` size the per-lane and per-edge figures (larger values are counted in the last);
// `top` caps the items.
CriticalPath critical_path(const DependencyGraph& g, size_t lanes, size_t edges, size_t top);

}  // namespace trnsim::profile
