// Recursive halving-doubling (COLL "RDH", INTRA): for a power-of-two number of ranks. The
// reduce-scatter halves: at distance d = r/2, r/4, ..., 1 position p exchanges with p XOR d,
// keeps the half of its current block range on its side of the split and sends the other half,
// which the partner adds; after log2(r) steps position p holds block p. The all-gather doubles
// back (distance 1, 2, ..., r/2). For all-reduce the positions follow the topology's
// hypercube order (a 2D torus of power-of-two sides "can be seen as a 4D hyper-cube", INTRA),
// so partners are neighbours; reduce-scatter and all-gather use rank order, since their output
// block must be the rank's own.
#include "fabric/algorithm.h"

namespace trnsim::fabric {

namespace {

struct Shape {
  std::vector<int32_t> order;
  int64_t count;
  int64_t n() const { return static_cast<int64_t>(order.size()); }
  // Elements of the positions' blocks [lo, hi).
  Range blocks(int64_t lo, int64_t hi) const {
    const Range a = block_range(count, n(), lo);
    const Range b = block_range(count, n(), hi - 1);
    return {a.off, b.off + b.len - a.off};
  }
};

int64_t log2i(int64_t n) {
  int64_t k = 0;
  while ((int64_t{1} << k) < n) ++k;
  return k;
}

// Reduce-scatter step s: distance d = n >> (s+1); position p's range before the step has
// size 2d and starts at (p / (2d)) * 2d.
void halving(const Shape& sh, int64_t s, std::vector<Transfer>& out) {
  const int64_t d = sh.n() >> (s + 1);
  for (int64_t p = 0; p < sh.n(); ++p) {
    const int64_t lo = (p / (2 * d)) * (2 * d);
    const bool upper = (p & d) != 0;
    const Range give = upper ? sh.blocks(lo, lo + d) : sh.blocks(lo + d, lo + 2 * d);
    out.push_back({sh.order[static_cast<size_t>(p)], sh.order[static_cast<size_t>(p ^ d)], give.off,
                   give.off, give.len, 0, 0, true});
  }
}

// All-gather step s: distance d = 1 << s; position p owns the d blocks starting at
// (p / d) * d and sends them to p XOR d.
void doubling(const Shape& sh, int64_t s, std::vector<Transfer>& out) {
  const int64_t d = int64_t{1} << s;
  for (int64_t p = 0; p < sh.n(); ++p) {
    const int64_t lo = (p / d) * d;
    const Range own = sh.blocks(lo, lo + d);
    out.push_back({sh.order[static_cast<size_t>(p)], sh.order[static_cast<size_t>(p ^ d)], own.off,
                   own.off, own.len, 0, 0, false});
  }
}

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
        const int64_t steps = log2i(ctx.ranks());
        Plan plan{"rdh", {}};
        if (ctx.op != Op::kAllGather)
          plan.phases.push_back({"recursive-halving", steps, false,
                                 [sh](int64_t s, auto& out) { halving(*sh, s, out); }});
        if (ctx.op != Op::kReduceScatter)
          plan.phases.push_back({"recursive-doubling", steps, false,
                                 [sh](int64_t s, auto& out) { doubling(*sh, s, out); }});
        return plan;
      }};
}

}  // namespace trnsim::fabric
