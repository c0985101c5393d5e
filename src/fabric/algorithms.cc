// The registry: an explicit list, so an algorithm cannot vanish by a linker dropping a static
// initialiser; a test checks that every algo_*.cc is listed.
#include <fmt/format.h>

#include "base/error.h"
#include "fabric/algorithm.h"

namespace trnsim::fabric {

std::span<const Algorithm> algorithms() {
  static const std::vector<Algorithm> list{
      ring_algorithm(),       kangaring_algorithm(),
      mesh_algorithm(),       single_step_mesh_algorithm(),
      rdh_algorithm(),        hierarchical_algorithm(),
      torus_ring_algorithm(), pairwise_algorithm(),
      pipeline_algorithm(),
  };
  return list;
}

const Algorithm& find_algorithm(std::string_view name) {
  std::vector<std::string_view> names;
  for (const auto& a : algorithms()) {
    if (a.name == name) return a;
    names.push_back(a.name);
  }
  throw InputError("--algorithm", std::string(name),
                   fmt::format("unknown algorithm; known: auto, {}", fmt::join(names, ", ")));
}

}  // namespace trnsim::fabric
