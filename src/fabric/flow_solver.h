// Flow-level bandwidth sharing: the transfers of one collective step start together and share
// every resource they cross (links, a rank's DMA engines, a chip's HBM) max-min fairly. Rates
// come from progressive filling (every unfrozen flow grows at the same pace; a resource that
// fills freezes the flows crossing it); when a flow ends the rates are recomputed, so a flow
// that is held back on one link speeds up when its competitors finish. A flow may use a
// resource with a coefficient (a reduction costs the DMA engines twice its bytes before
// near-memory accumulation); a flow's finish time is its fluid completion plus its latency.
//
// Folding: with `fold`, flows and resources are first partitioned into classes by colour
// refinement (flows: bytes, latency, the classes of the resources they use; resources:
// capacity, the classes of the flows on them) until the partition is stable. That partition is
// equitable, so progressive filling gives every member of a class the same rate, and the
// solver runs on one representative flow per class with per-resource loads
// a(c, l) = (uses of class-l resources by class-c flows) / |l|. Unfolded, every flow and
// resource is its own class; the tests check that both give the same times.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/units.h"

namespace trnsim::fabric {

struct FlowSet {
  std::vector<double> bytes;
  std::vector<int64_t> latency_ps;
  std::vector<uint32_t> begin{0};  // flow f uses res/coef [begin[f], begin[f+1])
  std::vector<int64_t> res;
  std::vector<double> coef;

  size_t size() const { return bytes.size(); }
  void clear() {
    bytes.clear();
    latency_ps.clear();
    begin.assign(1, 0);
    res.clear();
    coef.clear();
  }
  // Adds a flow whose uses were appended to res/coef since the last call.
  void close_flow(double b, Picoseconds latency) {
    bytes.push_back(b);
    latency_ps.push_back(latency.v);
    begin.push_back(static_cast<uint32_t>(res.size()));
  }
};

struct StepTiming {
  Picoseconds duration{0};
  int64_t flow_classes = 0;
  int64_t resource_classes = 0;
};

using CapacityFn = std::function<double(int64_t resource)>;  // bytes per second

StepTiming solve_step(const FlowSet& flows, const CapacityFn& capacity, bool fold);

// The max-min fair rate (bytes per second) of every flow of `flows`, unfolded: the sharing
// solve_step starts a step with. For timings whose flows come and go (concurrent.h).
std::vector<double> max_min_share(const FlowSet& flows, const CapacityFn& capacity);

}  // namespace trnsim::fabric
