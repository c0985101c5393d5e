// Recursive halving-doubling (COLL "RDH", INTRA): for a power-of-two number of ranks; the
// patterns are in rdh_steps.h. For all-reduce the positions follow the topology's hypercube
// order (a 2D torus of power-of-two sides "can be seen as a 4D hyper-cube", INTRA), so
// partners are neighbours; reduce-scatter and all-gather use rank order, since their output
// block must be the rank's own.
#include "fabric/algorithm.h"
#include "fabric/rdh_steps.h"

namespace trnsim::fabric {

namespace {

struct Shape {
  std::vector<int32_t> order;
  int64_t count;
  int64_t n() const { return static_cast<int64_t>(order.size()); }
  // The blocks of positions [lo, hi): one range.
  template <typename Emit>
  void operator()(int64_t lo, int64_t hi, Emit&& emit) const {
    const Range a = block_range(count, n(), lo);
    const Range b = block_range(count, n(), hi - 1);
    emit(Range{a.off, b.off + b.len - a.off});
  }
};

}  // namespace

Algorithm rdh_algorithm() {
  return {
      "rdh",
      "recursive halving (reduce-scatter) and doubling (all-gather) between partners "
      "p XOR 2^k; log2(r) steps each; power-of-two ranks",
      [](const Context& ctx) -> std::string {
        const int64_t n = ctx.ranks();
        if ((n & (n - 1)) != 0) return "rdh needs a power-of-two number of ranks";
        if (ctx.op == Op::kAllReduce || ctx.op == Op::kReduceScatter || ctx.op == Op::kAllGather)
          return "";
        return "rdh implements all-reduce, reduce-scatter and all-gather";
      },
      [](const Context& ctx) {
        auto sh = std::make_shared<Shape>();
        sh->count = ctx.count;
        if (ctx.op == Op::kAllReduce) {
          sh->order = ctx.net->hypercube_order();
        } else {
          for (int32_t r = 0; r < ctx.ranks(); ++r) sh->order.push_back(r);
        }
        const int64_t steps = log2_ceil(ctx.ranks());
        Plan plan{"rdh", {}};
        if (ctx.op != Op::kAllGather)
          plan.phases.push_back({"recursive-halving", steps, false, [sh](int64_t s, auto& out) {
                                   rdh_halving_step(sh->order, s, *sh, out);
                                 }});
        if (ctx.op != Op::kReduceScatter)
          plan.phases.push_back({"recursive-doubling", steps, false, [sh](int64_t s, auto& out) {
                                   rdh_doubling_step(sh->order, s, *sh, out);
                                 }});
        return plan;
      }};
}

}  // namespace trnsim::fabric
