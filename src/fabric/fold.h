// Symmetry folding of one step's flows (flow_solver.h): colour refinement of the bipartite
// flow-resource graph. Flows start coloured by (bytes, latency), resources by capacity; each
// round recolours a resource by its colour and the multiset of (flow colour, coefficient) on
// it, then a flow by its colour and the multiset of (resource colour, coefficient) it uses,
// until the number of classes stops growing (if that takes more than 256 rounds, every flow
// is its own class). Members of a class are indistinguishable to the
// max-min solver, so one representative per class suffices. Colours are numbered in order of
// first appearance and hashed with a fixed mix, so the result is deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/flow_solver.h"

namespace trnsim::fabric {

struct Partition {
  std::vector<int32_t> flow_class;  // per flow
  std::vector<int32_t> res_class;   // per local resource
  size_t flow_classes = 0;
  size_t resource_classes = 0;
};

// `local_res[u]` is the dense resource number of use u; `cap` the capacity per resource.
Partition refine(const FlowSet& fs, const std::vector<int32_t>& local_res,
                 const std::vector<double>& cap);
Partition identity_partition(const FlowSet& fs, const std::vector<double>& cap);

}  // namespace trnsim::fabric
