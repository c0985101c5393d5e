// Pairwise all-to-all: exchanges with one peer a step instead of every peer at once, in two
// stages, so a step holds one transfer per rank and memory grows linearly with the ranks (the
// mesh's one step holds r(r-1)). With C ranks a server and X servers, rank (s, l):
//   1. intra-server, steps k = 1..C-1: sends to (s, l+k mod C) the blocks it holds for the
//      ranks (t, l+k) of every server t, staged in the receiver's scratch at slot (t, l);
//      its own (k = 0) it stages locally;
//   2. inter-server, steps k = 1..X-1: sends to (s+k mod X, l) the C blocks staged for it
//      (from every (s, l'')), into that rank's out at block (s, l''); its own server's it
//      copies locally.
// Every inter-server step crosses EFA once per rank, the same pattern each step (folded in
// time); the intra-server steps are too on a switch, on a torus each shift has its own routes.
// Functional mode needs the count to split evenly over the ranks (equal blocks, so the staged
// slots fill the scratch exactly); timing takes any count.
#include <fmt/format.h>

#include <memory>

#include "fabric/algorithm.h"
#include "fabric/ring_steps.h"

namespace trnsim::fabric {

namespace {

struct Shape {
  int64_t C, X, ranks, count;
  bool sizes_only, switch_server;
  int32_t rank(int64_t s, int64_t l) const { return static_cast<int32_t>(s * C + l); }
};

// Stage 1 step k: every rank's blocks for local index l+k go to (s, l+k)'s scratch.
void intra_step(const Shape& sh, int64_t k, std::vector<Transfer>& out) {
  for (int64_t s = 0; s < sh.X; ++s) {
    for (int64_t l = 0; l < sh.C; ++l) {
      const int64_t to = (l + k) % sh.C;
      if (sh.sizes_only) {  // one transfer of the blocks' total length
        int64_t len = 0;
        for (int64_t t = 0; t < sh.X; ++t)
          len += block_range(sh.count, sh.ranks, t * sh.C + to).len;
        out.push_back({sh.rank(s, l), sh.rank(s, to), 0, 0, len, 0, kScratch, false});
        continue;
      }
      for (int64_t t = 0; t < sh.X; ++t) {
        const Range src = block_range(sh.count, sh.ranks, t * sh.C + to);
        const Range slot = block_range(sh.count, sh.ranks, t * sh.C + l);
        out.push_back(
            {sh.rank(s, l), sh.rank(s, to), src.off, slot.off, src.len, 0, kScratch, false});
      }
    }
  }
}

// Stage 2 step k: (s, l) sends the blocks staged for server s+k to (s+k, l)'s out.
void inter_step(const Shape& sh, int64_t k, std::vector<Transfer>& out) {
  for (int64_t s = 0; s < sh.X; ++s) {
    const int64_t t = (s + k) % sh.X;
    for (int64_t l = 0; l < sh.C; ++l) {
      if (sh.sizes_only) {
        int64_t len = 0;
        for (int64_t l2 = 0; l2 < sh.C; ++l2)
          len += block_range(sh.count, sh.ranks, t * sh.C + l2).len;
        out.push_back({sh.rank(s, l), sh.rank(t, l), 0, 0, len, kScratch, 1, false});
        continue;
      }
      for (int64_t l2 = 0; l2 < sh.C; ++l2) {
        const Range slot = block_range(sh.count, sh.ranks, t * sh.C + l2);
        const Range dst = block_range(sh.count, sh.ranks, s * sh.C + l2);
        out.push_back(
            {sh.rank(s, l), sh.rank(t, l), slot.off, dst.off, slot.len, kScratch, 1, false});
      }
    }
  }
}

}  // namespace

Algorithm pairwise_algorithm() {
  return {
      "pairwise",
      "all-to-all by exchanges with one peer a step: inside each server, then across servers "
      "between ranks of the same local index; memory linear in ranks",
      [](const Context& ctx) -> std::string {
        if (ctx.op != Op::kAllToAll) return "pairwise implements all-to-all";
        if (ctx.ranks() % ctx.net->ranks_per_server() != 0)
          return "pairwise needs every server to hold the same number of ranks";
        if (!ctx.sizes_only && ctx.count % ctx.ranks() != 0) {
          return fmt::format(
              "pairwise runs on data only when the {} elements split evenly over "
              "the {} ranks",
              ctx.count, ctx.ranks());
        }
        return "";
      },
      [](const Context& ctx) {
        auto sh = std::make_shared<const Shape>(
            Shape{ctx.net->ranks_per_server(), ctx.ranks() / ctx.net->ranks_per_server(),
                  ctx.ranks(), ctx.count, ctx.sizes_only, !ctx.net->topology().is_torus()});
        Plan plan{"pairwise", {}};
        // Shift k of m is one peer each way, except k = m/2, where both are the same rank
        // (one handshake, not two): that step is a phase of its own, so the others stay
        // uniform and fold in time.
        auto exchange = [&plan, sh](const std::string& name, int64_t m, bool uniform,
                                    void (*step)(const Shape&, int64_t, std::vector<Transfer>&)) {
          if (m < 2) return;
          const int64_t half = m % 2 == 0 ? m / 2 : 0;
          const int64_t steps = m - 1 - (half > 0 ? 1 : 0);
          if (steps > 0) {
            plan.phases.push_back(
                {name, steps, uniform, [sh, half, step](int64_t i, std::vector<Transfer>& o) {
                   const int64_t k = i + 1;
                   step(*sh, half > 0 && k >= half ? k + 1 : k, o);
                 }});
          }
          if (half > 0) {
            plan.phases.push_back(
                {name + " (opposite)", 1, true,
                 [sh, half, step](int64_t, std::vector<Transfer>& o) { step(*sh, half, o); }});
          }
        };
        plan.phases.push_back({"stage locally", 1, true,
                               [sh](int64_t, std::vector<Transfer>& o) { intra_step(*sh, 0, o); }});
        exchange("intra-server exchange", sh->C, sh->switch_server, intra_step);
        plan.phases.push_back({"copy own server's", 1, true,
                               [sh](int64_t, std::vector<Transfer>& o) { inter_step(*sh, 0, o); }});
        exchange("inter-server exchange", sh->X, true, inter_step);
        return plan;
      }};
}

}  // namespace trnsim::fabric
