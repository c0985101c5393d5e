// Hierarchical collectives (COLL; INTER "Hierarchical Algorithm"): X servers of g ranks each,
// a global collective broken into intra-server stages (over NeuronLink) and inter-server
// stages over "lanes", the X ranks of one local index (each over its chip's EFA NIC):
//   all-reduce     = intra reduce-scatter + inter all-reduce + intra all-gather
//   reduce-scatter = intra reduce-scatter + inter reduce-scatter (the second stage has less
//                    traffic, INTER)
//   all-gather     = inter all-gather + intra all-gather (the first stage has less traffic)
// Stages plug in (INTER: "any combination of intra-node and inter-node algorithms"): intra
// ring or KangaRing, inter ring, recursive halving-doubling (power-of-two servers) or, for
// all-reduce, a binomial tree; select.cc picks them unless --intra / --inter force them.
//
// What local rank l owns, per channel c (a slice c of C of everything):
//   all-reduce: block l of g of the buffer after the intra reduce-scatter; its lane splits
//     that into X parts, part s ending on server s;
//   reduce-scatter, all-gather: the global blocks s*g + l of every server s (its own output
//     block on each server, strided through the buffer); its lane's part s is block s*g + l.
// Only 1/g of the data crosses EFA, against most of it for a flat ring.
#include <fmt/format.h>

#include "fabric/algorithm.h"
#include "fabric/kanga_steps.h"
#include "fabric/rdh_steps.h"
#include "fabric/ring_steps.h"
#include "fabric/tree_steps.h"

namespace trnsim::fabric {

namespace {

struct Shape {
  Op op;
  int64_t g, X, count;
  bool sizes_only;
  std::vector<std::vector<int32_t>> local;  // per channel: server 0's ranks in ring order
  std::vector<KangaCycle> kanga;            // per channel: server 0's pairs (KangaRing)

  int64_t C() const { return static_cast<int64_t>(local.size()); }
  Range blk(int64_t c, int64_t b) const { return slice(block_range(count, g * X, b), C(), c); }
  Range group(int64_t c, int64_t l) const { return slice(block_range(count, g, l), C(), c); }

  // The pieces local rank l owns after the intra reduce-scatter on channel c.
  template <typename Emit>
  void intra_seg(int64_t c, int64_t l, Emit&& emit) const {
    if (op == Op::kAllReduce) return emit(group(c, l));
    lane_parts(c, l, 0, X, emit);
  }
  // The pieces of parts [lo, hi) of lane (c, l).
  template <typename Emit>
  void lane_parts(int64_t c, int64_t l, int64_t lo, int64_t hi, Emit&& emit) const {
    if (op == Op::kAllReduce) {
      const Range a = slice(group(c, l), X, lo), b = slice(group(c, l), X, hi - 1);
      return emit(Range{a.off, b.off + b.len - a.off});
    }
    Pieces<Emit&> pieces(sizes_only, emit);
    for (int64_t s = lo; s < hi; ++s) pieces.add(blk(c, s * g + l));
    pieces.flush();
  }
};

// The ranks of server s in a local order.
struct ServerOrder {
  const std::vector<int32_t>* local;
  int64_t base;
  size_t size() const { return local->size(); }
  int64_t operator[](int64_t p) const { return base + (*local)[static_cast<size_t>(p)]; }
};

// Lane l: local rank l of every server, servers in order.
struct Lane {
  int64_t l, g, servers;
  size_t size() const { return static_cast<size_t>(servers); }
  int64_t operator[](int64_t s) const { return s * g + l; }
};

using Sh = std::shared_ptr<const Shape>;
using StepFn = std::function<void(int64_t, std::vector<Transfer>&)>;

// The intra-server stage on every server and channel: reduce-scatter or all-gather.
void intra_phases(const Sh& sh, const std::string& algo, bool reduce, std::vector<Phase>& out) {
  const std::string name = reduce ? "intra reduce-scatter" : "intra all-gather";
  if (algo == "kangaring") {
    kanga_phases(
        name, sh->g / 2,
        [sh, reduce](int64_t k, std::vector<Transfer>& o) {
          for (int64_t s = 0; s < sh->X; ++s)
            for (int64_t c = 0; c < sh->C(); ++c) {
              KangaCycle cy = sh->kanga[static_cast<size_t>(c)];
              cy.base = static_cast<int32_t>(s * sh->g);
              auto seg = [&](int32_t r, auto&& emit) { sh->intra_seg(c, r - cy.base, emit); };
              reduce ? kanga_rs_step(cy, k, seg, o) : kanga_ag_step(cy, k, seg, o);
            }
        },
        out);
    return;
  }
  out.push_back({name, sh->g - 1, true, [sh, reduce](int64_t k, std::vector<Transfer>& o) {
                   for (int64_t s = 0; s < sh->X; ++s)
                     for (int64_t c = 0; c < sh->C(); ++c) {
                       const auto& loc = sh->local[static_cast<size_t>(c)];
                       const ServerOrder order{&loc, s * sh->g};
                       auto seg = [&](int64_t j, auto&& emit) {
                         sh->intra_seg(c, loc[static_cast<size_t>(j)], emit);
                       };
                       reduce ? ring_rs_step(order, k, seg, o) : ring_ag_step(order, k, seg, o);
                     }
                 }});
}

// Runs fn(lane, c, l) for every lane of every channel.
template <typename Fn>
void each_lane(const Shape& sh, Fn&& fn) {
  for (int64_t c = 0; c < sh.C(); ++c)
    for (int64_t l = 0; l < sh.g; ++l) fn(Lane{l, sh.g, sh.X}, c, l);
}

// The inter-server stage: reduce-scatter (rs), all-gather (ag), or both in turn.
void inter_phases(const Sh& sh, const std::string& algo, bool rs, bool ag,
                  std::vector<Phase>& out) {
  if (algo == "tree") {  // all-reduce only (why_not)
    const int64_t levels = log2_ceil(sh->X);
    out.push_back({"inter tree reduce", levels, false, [sh](int64_t k, std::vector<Transfer>& o) {
                     each_lane(*sh, [&](const Lane& lane, int64_t c, int64_t l) {
                       tree_reduce_step(
                           lane, k, [&](auto&& e) { e(sh->group(c, l)); }, o);
                     });
                   }});
    out.push_back(
        {"inter tree broadcast", levels, false, [sh, levels](int64_t k, std::vector<Transfer>& o) {
           each_lane(*sh, [&](const Lane& lane, int64_t c, int64_t l) {
             tree_broadcast_step(
                 lane, k, levels, [&](auto&& e) { e(sh->group(c, l)); }, o);
           });
         }});
    return;
  }
  auto emit_phase = [&](std::string name, int64_t steps, bool uniform, bool reduce, bool rdh) {
    out.push_back(
        {std::move(name), steps, uniform, [sh, reduce, rdh](int64_t k, std::vector<Transfer>& o) {
           each_lane(*sh, [&](const Lane& lane, int64_t c, int64_t l) {
             auto parts = [&](int64_t lo, int64_t hi, auto&& e) {
               sh->lane_parts(c, l, lo, hi, e);
             };
             auto seg = [&](int64_t s, auto&& e) { sh->lane_parts(c, l, s, s + 1, e); };
             if (rdh) {
               reduce ? rdh_halving_step(lane, k, parts, o) : rdh_doubling_step(lane, k, parts, o);
             } else {
               reduce ? ring_rs_step(lane, k, seg, o) : ring_ag_step(lane, k, seg, o);
             }
           });
         }});
  };
  const bool rdh = algo == "rdh";
  const int64_t steps = rdh ? log2_ceil(sh->X) : sh->X - 1;
  if (rs)
    emit_phase(rdh ? "inter recursive-halving" : "inter reduce-scatter", steps, !rdh, true, rdh);
  if (ag)
    emit_phase(rdh ? "inter recursive-doubling" : "inter all-gather", steps, !rdh, false, rdh);
}

std::string why_not(const Context& ctx) {
  if (ctx.op != Op::kAllReduce && ctx.op != Op::kReduceScatter && ctx.op != Op::kAllGather)
    return "hierarchical implements all-reduce, reduce-scatter and all-gather";
  const Network& net = *ctx.net;
  if (net.servers_used() < 2) return "hierarchical needs ranks on two or more servers";
  if (ctx.ranks() % net.ranks_per_server() != 0)
    return fmt::format(
        "hierarchical needs the same ranks on every server ({} ranks, {} per server)", ctx.ranks(),
        net.ranks_per_server());
  const std::string intra = select_intra(ctx), inter = select_inter(ctx);
  if (intra == "kangaring") {
    if (std::string why = kangaring_why_not(net, net.ranks_per_server()); !why.empty()) return why;
  } else if (intra != "ring") {
    return fmt::format("unknown intra-server stage '{}'; known: ring, kangaring", intra);
  }
  const int64_t X = net.servers_used();
  if (inter == "rdh") {
    if ((X & (X - 1)) != 0)
      return fmt::format("the rdh inter-server stage needs a power-of-two number of servers ({})",
                         X);
  } else if (inter == "tree") {
    if (ctx.op != Op::kAllReduce) return "the tree inter-server stage implements all-reduce";
  } else if (inter != "ring") {
    return fmt::format("unknown inter-server stage '{}'; known: ring, rdh, tree", inter);
  }
  return "";
}

Plan build(const Context& ctx) {
  const Network& net = *ctx.net;
  auto sh = std::make_shared<Shape>();
  sh->op = ctx.op;
  sh->g = net.ranks_per_server();
  sh->X = net.servers_used();
  sh->count = ctx.count;
  sh->sizes_only = ctx.sizes_only;
  const std::string intra = select_intra(ctx), inter = select_inter(ctx);
  const auto& orders = net.ring_orders();
  for (size_t c = 0; c < orders.size(); ++c) {
    sh->local.emplace_back(orders[c].begin(), orders[c].begin() + sh->g);
    if (intra == "kangaring") sh->kanga.push_back(kanga_cycle(sh->local.back(), c));
  }
  Plan plan{fmt::format("hierarchical({}+{})", intra, inter), {}};
  const bool ar = ctx.op == Op::kAllReduce;
  if (ctx.op != Op::kAllGather) intra_phases(sh, intra, true, plan.phases);
  inter_phases(sh, inter, ctx.op != Op::kAllGather, ctx.op != Op::kReduceScatter, plan.phases);
  if (ar || ctx.op == Op::kAllGather) intra_phases(sh, intra, false, plan.phases);
  return plan;
}

}  // namespace

Algorithm hierarchical_algorithm() {
  return {"hierarchical",
          "intra-server stages (ring or KangaRing) around an inter-server stage per local rank "
          "over EFA (ring, rdh or tree): all-reduce, reduce-scatter, all-gather",
          why_not, build};
}

}  // namespace trnsim::fabric
