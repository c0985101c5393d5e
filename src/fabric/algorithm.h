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

namespace trnsim::fabric {

struct Context {
  Op op = Op::kAllReduce;
  int64_t count = 0;  // elements of the full tensor (see plan.h)
  int elem_bytes = 4;
  int32_t root = 0;                        // broadcast
  std::vector<int32_t> perm;               // permute: rank i sends to perm[i]
  std::vector<std::vector<int64_t>> a2av;  // all-to-all-v: elements from i to j
  const Network* net = nullptr;

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

// The documented choice (select.cc) for a request.
const Algorithm& select_algorithm(const Context& ctx, double mesh_max_bytes, double rdh_max_bytes,
                                  int64_t mesh_max_ranks);

// The algorithm factories, one per file.
Algorithm ring_algorithm();
Algorithm mesh_algorithm();
Algorithm rdh_algorithm();
Algorithm hierarchical_algorithm();

}  // namespace trnsim::fabric
