// Hierarchical all-reduce (COLL; INTRA + INTER): inside each server a ring reduce-scatter
// over the server's ranks; then, for each block a server position owns, a ring all-reduce
// across the servers (one "lane" per server position, each over that position's EFA NIC);
// then a ring all-gather inside each server. Only 1/g of the data (g ranks per server)
// crosses EFA, against most of it for a flat ring. Needs two or more servers with the same
// number of ranks each.
#include <fmt/format.h>

#include "fabric/algorithm.h"
#include "fabric/ring_steps.h"

namespace trnsim::fabric {

namespace {

struct Shape {
  std::vector<std::vector<int32_t>> local;  // per channel: server 0's ranks in ring order
  int64_t g, servers, count;
  int64_t channels() const { return static_cast<int64_t>(local.size()); }
  // Segment owned by local position p on channel c after the intra-server reduce-scatter.
  Range group_seg(int64_t c, int64_t p) const {
    return slice(block_range(count, g, p), channels(), c);
  }
};

// The ranks of server s in channel c's order (rank numbers are server-major).
struct ServerOrder {
  const std::vector<int32_t>* local;
  int64_t base;
  size_t size() const { return local->size(); }
  int64_t operator[](int64_t p) const { return base + (*local)[static_cast<size_t>(p)]; }
};

// Lane (c, p): position p of every server, servers in order.
struct Lane {
  int64_t first, g, servers;
  size_t size() const { return static_cast<size_t>(servers); }
  int64_t operator[](int64_t s) const { return s * g + first; }
};

template <typename Fn>
void each_intra(const Shape& sh, Fn&& fn) {
  for (int64_t s = 0; s < sh.servers; ++s)
    for (int64_t c = 0; c < sh.channels(); ++c)
      fn(ServerOrder{&sh.local[static_cast<size_t>(c)], s * sh.g},
         [&sh, c](int64_t p) { return sh.group_seg(c, p); });
}

template <typename Fn>
void each_lane(const Shape& sh, Fn&& fn) {
  for (int64_t c = 0; c < sh.channels(); ++c)
    for (int64_t p = 0; p < sh.g; ++p) {
      const Range seg = sh.group_seg(c, p);
      fn(Lane{sh.local[static_cast<size_t>(c)][static_cast<size_t>(p)], sh.g, sh.servers},
         [seg, &sh](int64_t s) { return slice(seg, sh.servers, s); });
    }
}

}  // namespace

Algorithm hierarchical_algorithm() {
  return {"hierarchical",
          "ring reduce-scatter inside each server, ring all-reduce across servers per server "
          "position (over EFA), ring all-gather inside each server",
          [](const Context& ctx) -> std::string {
            if (ctx.op != Op::kAllReduce) return "hierarchical implements all-reduce";
            const Network& net = *ctx.net;
            if (net.servers_used() < 2) return "hierarchical needs ranks on two or more servers";
            if (ctx.ranks() % net.ranks_per_server() != 0)
              return fmt::format(
                  "hierarchical needs the same ranks on every server ({} ranks, "
                  "{} per server)",
                  ctx.ranks(), net.ranks_per_server());
            return "";
          },
          [](const Context& ctx) {
            const Network& net = *ctx.net;
            auto sh = std::make_shared<Shape>();
            sh->g = net.ranks_per_server();
            sh->servers = net.servers_used();
            sh->count = ctx.count;
            for (const auto& o : net.ring_orders())
              sh->local.emplace_back(o.begin(), o.begin() + sh->g);
            Plan plan{"hierarchical", {}};
            plan.phases.push_back({"intra reduce-scatter", sh->g - 1, true,
                                   [sh](int64_t k, std::vector<Transfer>& out) {
                                     each_intra(*sh, [&](const auto& o, const auto& seg) {
                                       ring_rs_step(o, k, seg, out);
                                     });
                                   }});
            plan.phases.push_back({"inter reduce-scatter", sh->servers - 1, true,
                                   [sh](int64_t k, std::vector<Transfer>& out) {
                                     each_lane(*sh, [&](const auto& o, const auto& seg) {
                                       ring_rs_step(o, k, seg, out);
                                     });
                                   }});
            plan.phases.push_back({"inter all-gather", sh->servers - 1, true,
                                   [sh](int64_t k, std::vector<Transfer>& out) {
                                     each_lane(*sh, [&](const auto& o, const auto& seg) {
                                       ring_ag_step(o, k, seg, out);
                                     });
                                   }});
            plan.phases.push_back(
                {"intra all-gather", sh->g - 1, true, [sh](int64_t k, std::vector<Transfer>& out) {
                   each_intra(
                       *sh, [&](const auto& o, const auto& seg) { ring_ag_step(o, k, seg, out); });
                 }});
            return plan;
          }};
}

}  // namespace trnsim::fabric
