// Pipelined ring broadcast: the root's buffer is cut into P chunks that travel a ring order from
// the root, each rank forwarding chunk c to the next while it receives chunk c+1, so the time is
// about (P + r - 2) steps of S/P instead of the mesh's r-1 copies of S through the root's DMA.
// P comes from the alpha-beta optimum of that sum, P = sqrt((r-2) S / (alpha B)), with alpha a
// step's fixed cost (step latency and two handshakes) and B a rank's collective DMA rate,
// between 1 and min(1024, elements).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "fabric/algorithm.h"

namespace trnsim::fabric {

namespace {

struct Shape {
  std::vector<int32_t> order;  // ring order starting at the root
  int64_t count, chunks;
  int64_t ranks() const { return static_cast<int64_t>(order.size()); }
};

// Step t: position p (0 .. r-2) forwards chunk t - p to position p + 1.
void step(const Shape& s, int64_t t, std::vector<Transfer>& out) {
  for (int64_t p = 0; p + 1 < s.ranks(); ++p) {
    const int64_t c = t - p;
    if (c < 0 || c >= s.chunks) continue;
    const Range r = block_range(s.count, s.chunks, c);
    out.push_back({s.order[static_cast<size_t>(p)], s.order[static_cast<size_t>(p + 1)], r.off,
                   r.off, r.len, 0, 0, false});
  }
}

int64_t chunks_for(const Context& ctx) {
  const Network& net = *ctx.net;
  const double alpha =
      static_cast<double>(net.step_latency().v) * 1e-12 + 2 * ctx.runtime->peer_sync_us * 1e-6;
  const double B = net.dma_bytes_per_s();
  const double r = static_cast<double>(ctx.ranks());
  const double best = std::sqrt(std::max(1.0, r - 2) * static_cast<double>(ctx.bytes()) /
                                std::max(1e-12, alpha * B));
  return std::clamp<int64_t>(std::llround(best), 1,
                             std::max<int64_t>(1, std::min<int64_t>(1024, ctx.count)));
}

}  // namespace

Algorithm pipeline_algorithm() {
  return {
      "pipeline",
      "broadcast along a ring order from the root in P chunks, each rank forwarding while "
      "it receives: P + r - 2 steps of S/P (P from the alpha-beta optimum)",
      [](const Context& ctx) -> std::string {
        if (ctx.op != Op::kBroadcast) return "pipeline implements broadcast";
        return "";
      },
      [](const Context& ctx) {
        const std::vector<int32_t>& ring = ctx.net->ring_orders()[0];
        const auto at = std::find(ring.begin(), ring.end(), ctx.root);
        std::vector<int32_t> order(at, ring.end());
        order.insert(order.end(), ring.begin(), at);
        auto s = std::make_shared<const Shape>(Shape{std::move(order), ctx.count, chunks_for(ctx)});
        const int64_t r = s->ranks(), P = s->chunks;
        Plan plan{fmt::format("pipeline({} chunks)", P), {}};
        if (r < 2) return plan;
        // Filling (fewer ranks busy each step), full (every rank forwarding: the same
        // pattern, folded in time), draining.
        const int64_t fill = std::min(r - 2, P);
        auto phase = [&plan, s](const char* name, int64_t from, int64_t to, bool uniform) {
          if (to <= from) return;
          plan.phases.push_back(
              {name, to - from, uniform,
               [s, from](int64_t k, std::vector<Transfer>& o) { step(*s, from + k, o); }});
        };
        phase("fill", 0, fill, false);
        phase("stream", fill, P, true);
        phase("drain", P, P + r - 2, false);
        return plan;
      }};
}

}  // namespace trnsim::fabric
