// Torus ring: a ring per torus dimension (multi-dimensional ring all-reduce, as collectives run
// on tori; issue 16). The ranks form a grid: a chip's ranks (if more than one), each torus
// dimension of a server, then the servers (if more than one). A reduce-scatter runs a ring along
// the first axis over the whole buffer, then along the second axis over the part each rank now
// owns, and so on; an all-gather runs the axes in reverse. A ring along a torus dimension is the
// chips of one line of the torus, each next to the next and the last next to the first, so
// every step is one hop; each ring runs in both directions at once, each direction carrying
// half of every segment. Steps: sum over axes of (m_a - 1) per half, against (r - 1) for one
// ring through all r ranks; bytes per rank are the same (S (r-1)/r per half).
//
// Segments are unions of the ranks' own blocks (block_range(count, r, q)), so the reduce-scatter
// leaves rank q holding block q and the all-gather starts from it, as plan.h requires.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "fabric/algorithm.h"
#include "fabric/ring_steps.h"

namespace trnsim::fabric {

namespace {

struct Grid {
  std::vector<int64_t> size;                // per axis (each > 1)
  std::vector<std::vector<int64_t>> coord;  // per rank, per axis
  std::vector<int32_t> rank_at;             // mixed-radix index (axis 0 fastest) -> rank
  int64_t stride(size_t axis) const {
    int64_t s = 1;
    for (size_t a = 0; a < axis; ++a) s *= size[a];
    return s;
  }
};

// The grid of the ranks, or "" set to why there is none.
Grid make_grid(const Network& net, std::string& why) {
  Grid g;
  const Topology& topo = net.topology();
  const int64_t rpc = net.ranks_per_chip();
  const int64_t rps = net.ranks_per_server();
  if (!topo.is_torus()) {
    why = "torus-ring needs torus servers";
    return g;
  }
  if (rps != topo.chips_per_server() * rpc || net.ranks() % rps != 0) {
    why = "torus-ring needs every rank of every chip of each server it uses";
    return g;
  }
  struct Axis {
    int64_t size;
    std::function<int64_t(int64_t rank)> coord;
  };
  std::vector<Axis> axes;
  if (rpc > 1) axes.push_back({rpc, [rpc](int64_t r) { return r % rpc; }});
  const std::vector<int64_t>& dims = topo.dims();
  int64_t stride = 1;
  for (int64_t d : dims) {
    if (d > 1) {
      axes.push_back({d, [&net, &topo, stride, d](int64_t r) {
                        const int64_t local = net.chip_of(r) % topo.chips_per_server();
                        return (local / stride) % d;
                      }});
    }
    stride *= d;
  }
  const int64_t servers = net.ranks() / rps;
  if (servers > 1) axes.push_back({servers, [rps](int64_t r) { return r / rps; }});
  if (axes.size() < 2) {
    why = "torus-ring needs at least two axes longer than 1 (else it is the ring)";
    return g;
  }
  const auto n = static_cast<size_t>(net.ranks());
  g.rank_at.assign(n, -1);
  g.coord.resize(n);
  for (const Axis& a : axes) g.size.push_back(a.size);
  for (size_t r = 0; r < n; ++r) {
    int64_t index = 0;
    for (size_t a = 0; a < axes.size(); ++a) {
      g.coord[r].push_back(axes[a].coord(static_cast<int64_t>(r)));
      index += g.coord[r][a] * g.stride(a);
    }
    int32_t& slot = g.rank_at[static_cast<size_t>(index)];
    if (slot >= 0) {
      why = "torus-ring: two ranks at one grid position";
      return g;
    }
    slot = static_cast<int32_t>(r);
  }
  return g;
}

struct Shape {
  Grid grid;
  int64_t count, ranks;
  bool sizes_only;
  int64_t directions;  // 2: each ring both ways, each carrying half of every segment; 1: one

  // The rings along `axis`: for each combination of the other axes, the ranks in axis order.
  std::vector<std::vector<int32_t>> rings(size_t axis) const {
    const int64_t m = grid.size[axis], st = grid.stride(axis);
    std::vector<std::vector<int32_t>> out;
    for (int64_t base = 0; base < ranks; ++base) {
      if ((base / st) % m != 0) continue;  // one ring per index with axis coordinate 0
      std::vector<int32_t> ring;
      for (int64_t j = 0; j < m; ++j)
        ring.push_back(grid.rank_at[static_cast<size_t>(base + j * st)]);
      out.push_back(std::move(ring));
    }
    return out;
  }

  // Segment j of a ring along `axis` whose ranks share `anchor`'s coordinates on the axes before
  // it: the blocks of every rank with those coordinates and coordinate j on `axis`; direction
  // `dir` carries its slice `dir` of each block.
  template <typename Emit>
  void seg(size_t axis, int32_t anchor, int64_t j, int64_t dir, Emit&& emit) const {
    Pieces<Emit&> pieces(sizes_only, emit);
    int64_t fixed = 0;  // the index part of the axes before `axis`
    for (size_t a = 0; a < axis; ++a)
      fixed += grid.coord[static_cast<size_t>(anchor)][a] * grid.stride(a);
    fixed += j * grid.stride(axis);
    const int64_t inner = grid.stride(axis + 1), outer = ranks / inner;
    for (int64_t o = 0; o < outer; ++o) {
      const int32_t q = grid.rank_at[static_cast<size_t>(fixed + o * inner)];
      pieces.add(slice(block_range(count, ranks, q), directions, dir));
    }
    pieces.flush();
  }
};

Phase axis_phase(const std::shared_ptr<const Shape>& s, size_t axis, bool reduce) {
  auto rings = std::make_shared<const std::vector<std::vector<int32_t>>>(s->rings(axis));
  const int64_t m = s->grid.size[axis];
  return {fmt::format("{} axis {}", reduce ? "reduce-scatter" : "all-gather", axis), m - 1, true,
          [s, rings, axis, reduce](int64_t k, std::vector<Transfer>& out) {
            for (const auto& ring : *rings) {
              for (int64_t dir = 0; dir < s->directions; ++dir) {
                std::vector<int32_t> order = ring;
                if (dir == 1) std::reverse(order.begin(), order.end());
                // Segment j is the one position j of the forward ring owns.
                const auto m = static_cast<int64_t>(ring.size());
                auto seg = [&](int64_t p, auto&& emit) {
                  const int64_t j = dir == 0 ? p : m - 1 - p;
                  s->seg(axis, ring[0], j, dir, emit);
                };
                if (reduce)
                  ring_rs_step(order, k, seg, out);
                else
                  ring_ag_step(order, k, seg, out);
              }
            }
          }};
}

}  // namespace

Algorithm torus_ring_algorithm() {
  return {
      "torus-ring",
      "a ring per torus dimension (and across a chip's cores and across servers), both "
      "directions: reduce-scatter axis by axis, all-gather in reverse; sum of 2(m_a-1) steps",
      [](const Context& ctx) -> std::string {
        if (ctx.op != Op::kAllReduce && ctx.op != Op::kReduceScatter && ctx.op != Op::kAllGather)
          return "torus-ring implements all-reduce, reduce-scatter and all-gather";
        std::string why;
        make_grid(*ctx.net, why);
        return why;
      },
      [](const Context& ctx) {
        std::string why;
        auto s = std::make_shared<Shape>(Shape{make_grid(*ctx.net, why), ctx.count, ctx.ranks(),
                                               ctx.sizes_only, ctx.ring_directions});
        Plan plan{"torus-ring", {}};
        const size_t axes = s->grid.size.size();
        if (ctx.op != Op::kAllGather)
          for (size_t a = 0; a < axes; ++a) plan.phases.push_back(axis_phase(s, a, true));
        if (ctx.op != Op::kReduceScatter)
          for (size_t a = axes; a-- > 0;) plan.phases.push_back(axis_phase(s, a, false));
        return plan;
      }};
}

}  // namespace trnsim::fabric
