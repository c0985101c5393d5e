// The collective algorithms: one file each (algo_<name>.cc), listed in algorithms.cc. An
// algorithm says whether it applies to a request (and why not) and builds its plan.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/network.h"
#include "fabric/plan.h"
#include "fabric/runtime.h"

namespace trnsim::fabric {

struct Context {
  Op op = Op::kAllReduce;
  int64_t count = 0;  // elements of the full tensor (see plan.h)
  int elem_bytes = 4;
  int32_t root = 0;                        // broadcast
  std::vector<int32_t> perm;               // permute: rank i sends to perm[i]
  std::vector<std::vector<int64_t>> a2av;  // all-to-all-v: elements from i to j
  const Network* net = nullptr;
  const RuntimeSpec* runtime = nullptr;  // the selection thresholds (select.cc)
  // Timing only reads sizes: an algorithm may then merge a rank's pieces to one destination
  // into one transfer of their total length (offsets unused), as one DMA descriptor chain
  // would move them; functional mode needs every piece at its offset.
  bool sizes_only = false;
  // Hierarchical stages: "" picks by the documented rule (select.cc); else intra "ring" or
  // "kangaring", inter "ring", "rdh" or "tree".
  std::string intra, inter;
  // Rings (ring, torus-ring): 2 = both directions of every cycle (the default), 1 = one.
  int ring_directions = 2;

  int64_t ranks() const { return net->ranks(); }
  int64_t bytes() const { return count * elem_bytes; }
};

struct Algorithm {
  std::string_view name;
  std::string_view doc;
  // Empty when the algorithm applies to the request, else the reason it does not.
  std::function<std::string(const Context&)> why_not;
  std::function<Plan(const Context&)> build;
};

// Every algorithm, in the order of algorithms.cc.
std::span<const Algorithm> algorithms();
const Algorithm& find_algorithm(std::string_view name);  // throws InputError listing names

// The documented choice (select.cc) for a request; ctx.runtime holds the thresholds.
const Algorithm& select_algorithm(const Context& ctx);
// The stages of a hierarchical collective (select.cc): intra-server "ring" or "kangaring",
// inter-server "ring", "rdh" or "tree"; forced by ctx.intra / ctx.inter when set.
std::string select_intra(const Context& ctx);
std::string select_inter(const Context& ctx);
// Whether recursive halving-doubling's partners are neighbours: a switch, or torus dimensions
// of at most 4 (select.cc).
bool rdh_partners_adjacent(const Network& net);
// Whether single-step mesh beats two-step mesh for an all-reduce (select.cc).
bool single_step_mesh_pays(const Context& ctx);

// The algorithm factories, one per file.
Algorithm ring_algorithm();
Algorithm kangaring_algorithm();
Algorithm mesh_algorithm();
Algorithm single_step_mesh_algorithm();
Algorithm rdh_algorithm();
Algorithm hierarchical_algorithm();
Algorithm torus_ring_algorithm();
Algorithm pairwise_algorithm();
Algorithm pipeline_algorithm();

// Why KangaRing cannot pair a group's ranks ("" when it can): every chip used must hold an
// even number (>= 2) of the group's ranks, consecutive in ring order (algo_kangaring.cc).
std::string kangaring_why_not(const Network& net, int64_t ranks_per_group);

}  // namespace trnsim::fabric
