// The algorithm choice, after the Neuron runtime's published sweet ranges (INTRA "Algorithm
// Summary": Mesh < 1 MB, RDH 1-56 MB, KangaRing > 56 MB, Ring as the fallback; INTER for the
// stages of hierarchical collectives), with the thresholds from the runtime file:
//   1. all-to-all up to select.mesh_max_ranks ranks, all-to-all-v, broadcast, permute: mesh;
//      all-to-all beyond: pairwise (one peer a step, memory linear in ranks); broadcast from
//      select.mesh_max_bytes: pipeline (chunks along a ring, not r-1 copies from the root);
//   2. all-reduce, reduce-scatter, all-gather over two or more servers: hierarchical, when
//      every server has the same ranks (stages: select_intra, select_inter);
//   3. below select.mesh_max_bytes and at most select.mesh_max_ranks ranks: for all-reduce
//      single-step mesh when it pays (single_step_mesh_pays), else mesh;
//   4. below select.rdh_max_bytes with a power-of-two number of ranks: rdh, where its partners
//      are neighbours (a switch, or torus dimensions of at most 4: INTRA's 4x4 torus "seen as a
//      4D hyper-cube"); on wider tori its partners 2^k apart are up to 2^(k-1) hops away and
//      the steps it saves cost more than they save (bench/collective_probes.py);
//   5. kangaring when the group pairs the ranks of its chips (INTRA: "better than Ring at all
//      sizes" there);
//   6. torus-ring when the ranks fill torus servers on two or more axes (a ring per dimension:
//      its steps are the sum of the dimensions', not their product; bytes per rank the same);
//   7. otherwise ring.
#include <fmt/format.h>

#include "base/error.h"
#include "fabric/algorithm.h"

namespace trnsim::fabric {

bool single_step_mesh_pays(const Context& ctx) {
  // INTER: single-step mesh wins "where the extra data transfer time is shorter than" the hop
  // it saves. Extra bytes on the busiest rank's collective DMA, as Network::path charges
  // them (a reduction costs `red` times its bytes): single-step sends r buffers of S reduced,
  // two-step mesh (r-1)/r S reduced plus (r-1)/r S copied.
  const Network& net = *ctx.net;
  const auto r = static_cast<double>(ctx.ranks());
  const auto S = static_cast<double>(ctx.bytes());
  const double red = net.near_memory_accumulation() ? 1 : 2;
  const double extra = red * r * S - (red + 1) * (r - 1) / r * S;
  const double extra_s = extra / net.dma_bytes_per_s();
  return extra_s < static_cast<double>(net.step_latency().v) * 1e-12;
}

std::string select_intra(const Context& ctx) {
  if (!ctx.intra.empty()) return ctx.intra;
  return kangaring_why_not(*ctx.net, ctx.net->ranks_per_server()).empty() ? "kangaring" : "ring";
}

std::string select_inter(const Context& ctx) {
  if (!ctx.inter.empty()) return ctx.inter;
  const int64_t X = ctx.net->servers_used();
  const auto bytes = static_cast<double>(ctx.bytes());
  const bool pow2 = (X & (X - 1)) == 0;
  if (pow2 && (bytes < ctx.runtime->rdh_max_bytes || X > ctx.runtime->inter_ring_max_servers))
    return "rdh";
  // A binomial tree has 2 ceil(log2 X) steps against the ring's 2(X-1): for small all-reduces.
  int64_t levels = 0;
  while ((int64_t{1} << levels) < X) ++levels;
  if (ctx.op == Op::kAllReduce && bytes < ctx.runtime->mesh_max_bytes && levels < X - 1)
    return "tree";
  return "ring";
}

bool rdh_partners_adjacent(const Network& net) {
  const Topology& topo = net.topology();
  if (!topo.is_torus()) return true;
  for (int64_t d : topo.dims())
    if (d > 4) return false;
  return true;
}

const Algorithm& select_algorithm(const Context& ctx) {
  const RuntimeSpec& rt = *ctx.runtime;
  const Algorithm& mesh = find_algorithm("mesh");
  if (ctx.op == Op::kAllToAll && ctx.ranks() > rt.mesh_max_ranks) {
    const Algorithm& pairwise = find_algorithm("pairwise");
    if (pairwise.why_not(ctx).empty()) return pairwise;
  }
  if (ctx.op == Op::kBroadcast && static_cast<double>(ctx.bytes()) >= rt.mesh_max_bytes)
    return find_algorithm("pipeline");
  if (ctx.op == Op::kAllToAll || ctx.op == Op::kAllToAllV || ctx.op == Op::kBroadcast ||
      ctx.op == Op::kPermute)
    return mesh;
  const Algorithm& hier = find_algorithm("hierarchical");
  if (ctx.net->servers_used() <= 1 && (!ctx.intra.empty() || !ctx.inter.empty()))
    throw InputError("--intra/--inter", "",
                     "the stages of a hierarchical collective apply across servers; this one "
                     "runs inside one server");
  if (ctx.net->servers_used() > 1) {
    const std::string why = hier.why_not(ctx);
    if (why.empty()) return hier;
    // Stages were forced but do not apply: say so rather than fall back to a flat algorithm.
    if (!ctx.intra.empty() || !ctx.inter.empty()) throw InputError("--intra/--inter", "", why);
  }
  const auto bytes = static_cast<double>(ctx.bytes());
  if (bytes < rt.mesh_max_bytes && ctx.ranks() <= rt.mesh_max_ranks && mesh.why_not(ctx).empty()) {
    const Algorithm& single = find_algorithm("single-step-mesh");
    if (ctx.op == Op::kAllReduce && single_step_mesh_pays(ctx) && single.why_not(ctx).empty())
      return single;
    return mesh;
  }
  const Algorithm& rdh = find_algorithm("rdh");
  if (bytes < rt.rdh_max_bytes && rdh_partners_adjacent(*ctx.net) && rdh.why_not(ctx).empty())
    return rdh;
  const Algorithm& kanga = find_algorithm("kangaring");
  if (kanga.why_not(ctx).empty()) return kanga;
  const Algorithm& torus = find_algorithm("torus-ring");
  if (torus.why_not(ctx).empty()) return torus;
  return find_algorithm("ring");
}

}  // namespace trnsim::fabric
