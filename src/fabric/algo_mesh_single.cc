// Single-step mesh all-reduce (INTRA, INTER "Single-step Mesh Algorithm (AllReduce)"): every
// rank duplicates and broadcasts its whole buffer to all peers, and each rank reduces what it
// receives, so an all-reduce costs one step instead of mesh's two, at (r-1) x S per rank
// instead of 2(r-1)/r x S ("not optimal"). Every rank adds the r buffers in rank order into
// its scratch, each addition rounded to the dtype (a chain of two-operand DMA reductions), and
// the last addition also writes the data buffer: the same order on every rank, so the
// replicas agree bit for bit (assumed; INTRA/INTER do not state the order).
// Modelled as r transfers into each rank (its own buffer included): the reduction is charged
// to the sending DMA, as for every reduction here, which moves the same bytes as a 1R(r-1)W
// broadcast followed by an rR1W local reduction. select.cc picks it when the extra transfer
// time is below the step latency it saves (INTER: it "outperforms regular Mesh ... where the
// extra data transfer time is shorter than" a hop).
#include <fmt/format.h>

#include "fabric/algorithm.h"

namespace trnsim::fabric {

namespace {
constexpr int64_t kMaxRanks = 4096;  // as mesh: r(r-1) transfers a step
}

Algorithm single_step_mesh_algorithm() {
  return {"single-step-mesh",
          "all-reduce in one step: every rank sends its whole buffer to every other rank, "
          "which reduces them",
          [](const Context& ctx) -> std::string {
            if (ctx.op != Op::kAllReduce) return "single-step-mesh implements all-reduce";
            if (ctx.ranks() > kMaxRanks)
              return fmt::format(
                  "single-step-mesh sends r(r-1) whole buffers a step; refused above {} ranks",
                  kMaxRanks);
            return "";
          },
          [](const Context& ctx) {
            const int64_t n = ctx.ranks(), count = ctx.count;
            Plan plan{"single-step-mesh", {}};
            plan.phases.push_back(
                {"all-reduce", 1, true, [n, count](int64_t, std::vector<Transfer>& out) {
                   for (int64_t j = 0; j < n; ++j)
                     for (int64_t i = 0; i < n; ++i) {
                       Transfer x{static_cast<int32_t>(i),
                                  static_cast<int32_t>(j),
                                  0,
                                  0,
                                  count,
                                  0,
                                  kScratch,
                                  i > 0};
                       if (i == n - 1) x.dst2 = static_cast<int32_t>(j);  // data buffer
                       out.push_back(x);
                     }
                 }});
            return plan;
          }};
}

}  // namespace trnsim::fabric
