// Ring (COLL, INTRA "Ring Algorithm"): ranks in a directed cycle; all-reduce is a
// reduce-scatter then an all-gather around the ring, 2(r-1) steps of S/r per rank. Several
// rings run at once ("multiple cycles ... in parallel for full wire bandwidth"): one per
// Hamiltonian order the topology offers (a snake per torus dimension), each carrying a slice
// of every block, in both directions unless Context::ring_directions is 1; the links they share
// are shared max-min fairly.
#include "fabric/algorithm.h"
#include "fabric/ring_steps.h"

namespace trnsim::fabric {

namespace {

struct RingShape {
  std::vector<std::vector<int32_t>> orders;
  int64_t count;
  int64_t ranks() const { return static_cast<int64_t>(orders[0].size()); }
  Range seg(size_t c, int64_t p) const {
    const Range b = block_range(count, ranks(), orders[c][static_cast<size_t>(p)]);
    return slice(b, static_cast<int64_t>(orders.size()), static_cast<int64_t>(c));
  }
};

Phase rs_phase(const std::shared_ptr<RingShape>& s) {
  return {"reduce-scatter", s->ranks() - 1, true, [s](int64_t k, std::vector<Transfer>& out) {
            for (size_t c = 0; c < s->orders.size(); ++c)
              ring_rs_step(
                  s->orders[c], k, [&](int64_t p) { return s->seg(c, p); }, out);
          }};
}

Phase ag_phase(const std::shared_ptr<RingShape>& s) {
  return {"all-gather", s->ranks() - 1, true, [s](int64_t k, std::vector<Transfer>& out) {
            for (size_t c = 0; c < s->orders.size(); ++c)
              ring_ag_step(
                  s->orders[c], k, [&](int64_t p) { return s->seg(c, p); }, out);
          }};
}

}  // namespace

Algorithm ring_algorithm() {
  return {
      "ring",
      "directed rings over all ranks, one per Hamiltonian order of the topology; "
      "reduce-scatter then all-gather, 2(r-1) steps",
      [](const Context& ctx) -> std::string {
        if (ctx.op == Op::kAllReduce || ctx.op == Op::kReduceScatter || ctx.op == Op::kAllGather)
          return "";
        return "ring implements all-reduce, reduce-scatter and all-gather";
      },
      [](const Context& ctx) {
        // The network lists every cycle forward, then each reversed (network.h).
        std::vector<std::vector<int32_t>> orders = ctx.net->ring_orders();
        const size_t forward = ctx.net->topology().server_ring_orders().size();
        if (ctx.ring_directions == 1 && orders.size() > forward) orders.resize(forward);
        auto s = std::make_shared<RingShape>(RingShape{std::move(orders), ctx.count});
        Plan plan{"ring", {}};
        if (ctx.op != Op::kAllGather) plan.phases.push_back(rs_phase(s));
        if (ctx.op != Op::kReduceScatter) plan.phases.push_back(ag_phase(s));
        return plan;
      }};
}

}  // namespace trnsim::fabric
