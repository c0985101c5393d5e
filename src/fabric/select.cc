// The algorithm choice, after the Neuron runtime's published sweet ranges (INTRA "Algorithm
// Summary": Mesh < 1 MB, RDH 1-56 MB, KangaRing > 56 MB, Ring as the fallback), with the
// thresholds from the runtime file:
//   1. all-to-all(-v), broadcast, permute: mesh (the only algorithm that implements them);
//   2. all-reduce over two or more servers: hierarchical, when every server has the same ranks;
//   3. below select.mesh_max_bytes and at most select.mesh_max_ranks ranks: mesh;
//   4. below select.rdh_max_bytes with a power-of-two number of ranks: rdh;
//   5. otherwise ring (KangaRing is not modelled yet; ring stands in for it).
#include "fabric/algorithm.h"

namespace trnsim::fabric {

const Algorithm& select_algorithm(const Context& ctx, double mesh_max_bytes, double rdh_max_bytes,
                                  int64_t mesh_max_ranks) {
  const Algorithm& mesh = find_algorithm("mesh");
  if (ctx.op == Op::kAllToAll || ctx.op == Op::kAllToAllV || ctx.op == Op::kBroadcast ||
      ctx.op == Op::kPermute)
    return mesh;
  const Algorithm& hier = find_algorithm("hierarchical");
  if (hier.why_not(ctx).empty()) return hier;
  const auto bytes = static_cast<double>(ctx.bytes());
  if (bytes < mesh_max_bytes && ctx.ranks() <= mesh_max_ranks && mesh.why_not(ctx).empty())
    return mesh;
  const Algorithm& rdh = find_algorithm("rdh");
  if (bytes < rdh_max_bytes && rdh.why_not(ctx).empty()) return rdh;
  return find_algorithm("ring");
}

}  // namespace trnsim::fabric
