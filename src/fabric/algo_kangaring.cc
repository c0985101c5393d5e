// KangaRing (COLL; INTRA "KangaRing Algorithm", the Neuron runtime's choice above 56 MB): a
// ring over pairs of same-chip ranks in which only the primary of each pair moves and reduces
// data (kanga_steps.h). Against a ring of the same ranks it halves the steps and, with
// duplicated writes (1R2W) and three-operand reductions (3R1W), touches HBM 3 times instead
// of 4 per chunk and pair in an all-gather and 4 instead of 6 in a reduce-scatter (INTRA).
// One cycle per ring order of the topology (channels), each carrying a slice of every block,
// primaries alternating between channels.
//
// INTRA: "KangaRing is only relevant for TP replica-groups where all ranks in chip are in
// same rank-list"; it is an intra-node algorithm (the hierarchical one uses it inside each
// server), so it applies on one server, every chip holding an even number of the ranks.
#include <fmt/format.h>

#include "fabric/algorithm.h"
#include "fabric/kanga_steps.h"
#include "fabric/ring_steps.h"

namespace trnsim::fabric {

std::string kangaring_why_not(const Network& net, int64_t ranks_per_group) {
  const int rpc = net.ranks_per_chip();
  if (rpc < 2 || rpc % 2 != 0)
    return fmt::format(
        "kangaring pairs the ranks of a chip; this placement has {} rank(s) per chip (a rank "
        "is a chip, or LNC leaves one core)",
        rpc);
  if (ranks_per_group % rpc != 0)
    return fmt::format("kangaring needs every chip's {} ranks in the group ({} ranks)", rpc,
                       ranks_per_group);
  return "";
}

namespace {

struct Shape {
  std::vector<KangaCycle> cycles;  // one per channel
  int64_t count, n;
  Range seg(size_t c, int32_t rank) const {
    return slice(block_range(count, n, rank), static_cast<int64_t>(cycles.size()),
                 static_cast<int64_t>(c));
  }
};

Plan build(const Context& ctx) {
  auto sh = std::make_shared<Shape>();
  sh->count = ctx.count;
  sh->n = ctx.ranks();
  const auto& orders = ctx.net->ring_orders();
  for (size_t c = 0; c < orders.size(); ++c) sh->cycles.push_back(kanga_cycle(orders[c], c));
  const int64_t m = sh->cycles[0].m();
  Plan plan{"kangaring", {}};
  for (const bool rs : {true, false}) {
    if (ctx.op == (rs ? Op::kAllGather : Op::kReduceScatter)) continue;
    kanga_phases(
        rs ? "reduce-scatter" : "all-gather", m,
        [sh, rs](int64_t k, std::vector<Transfer>& out) {
          for (size_t c = 0; c < sh->cycles.size(); ++c) {
            auto seg = [&](int32_t r, auto&& emit) { emit(sh->seg(c, r)); };
            rs ? kanga_rs_step(sh->cycles[c], k, seg, out)
               : kanga_ag_step(sh->cycles[c], k, seg, out);
          }
        },
        plan.phases);
  }
  return plan;
}

}  // namespace

Algorithm kangaring_algorithm() {
  return {
      "kangaring",
      "ring over the primaries of same-chip rank pairs (Trn2/Trn3 LNC=2, Trn1 LNC=1); "
      "3R1W reductions and 1R2W duplicated writes, m = r/2 steps per pattern",
      [](const Context& ctx) -> std::string {
        if (ctx.op != Op::kAllReduce && ctx.op != Op::kReduceScatter && ctx.op != Op::kAllGather)
          return "kangaring implements all-reduce, reduce-scatter and all-gather";
        if (ctx.net->servers_used() > 1)
          return "kangaring is an intra-server algorithm (INTRA); across servers use "
                 "hierarchical --intra kangaring";
        return kangaring_why_not(*ctx.net, ctx.ranks());
      },
      build};
}

}  // namespace trnsim::fabric
