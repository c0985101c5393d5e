// Mesh (COLL, INTRA "Mesh Algorithm"): every rank writes directly to every other in one step,
// the fabric routing the traffic (so routes overlap and links are over-subscribed: good for
// small sizes). All-reduce is a direct reduce-scatter then a direct all-gather (2 steps); the
// receiver of a reduce-scatter adds the contributions in rank order starting after itself.
// Also all-to-all(-v), broadcast and permute, each one step.
#include <fmt/format.h>

#include "fabric/algorithm.h"

namespace trnsim::fabric {

namespace {

constexpr int64_t kMaxRanks = 4096;

void rs_step(int64_t n, int64_t count, std::vector<Transfer>& out) {
  for (int64_t j = 0; j < n; ++j) {
    const Range b = block_range(count, n, j);
    for (int64_t d = 1; d < n; ++d) {
      const auto i = static_cast<int32_t>((j + d) % n);
      out.push_back({i, static_cast<int32_t>(j), b.off, b.off, b.len, 0, 0, true});
    }
  }
}

void ag_step(int64_t n, int64_t count, std::vector<Transfer>& out) {
  for (int64_t i = 0; i < n; ++i) {
    const Range b = block_range(count, n, i);
    for (int64_t d = 1; d < n; ++d) {
      const auto j = static_cast<int32_t>((i + d) % n);
      out.push_back({static_cast<int32_t>(i), j, b.off, b.off, b.len, 0, 0, false});
    }
  }
}

Plan build(const Context& ctx) {
  const int64_t n = ctx.ranks(), count = ctx.count;
  Plan plan{"mesh", {}};
  auto one = [&](std::string name, std::function<void(std::vector<Transfer>&)> f) {
    plan.phases.push_back(
        {std::move(name), 1, true, [f](int64_t, std::vector<Transfer>& out) { f(out); }});
  };
  switch (ctx.op) {
    case Op::kAllReduce:
      one("reduce-scatter", [=](auto& out) { rs_step(n, count, out); });
      one("all-gather", [=](auto& out) { ag_step(n, count, out); });
      break;
    case Op::kReduceScatter:
      one("reduce-scatter", [=](auto& out) { rs_step(n, count, out); });
      break;
    case Op::kAllGather:
      one("all-gather", [=](auto& out) { ag_step(n, count, out); });
      break;
    case Op::kAllToAll:
      one("all-to-all", [=](auto& out) {
        for (int64_t i = 0; i < n; ++i)
          for (int64_t d = 0; d < n; ++d) {
            const int64_t j = (i + d) % n;
            const Range s = block_range(count, n, j), t = block_range(count, n, i);
            out.push_back({static_cast<int32_t>(i), static_cast<int32_t>(j), s.off, t.off, s.len, 0,
                           1, false});
          }
      });
      break;
    case Op::kAllToAllV: {
      const auto a = ctx.a2av;
      one("all-to-all-v", [=](auto& out) {
        std::vector<int64_t> dst_off(static_cast<size_t>(n), 0);
        for (int64_t i = 0; i < n; ++i) {
          int64_t src_off = 0;
          for (int64_t j = 0; j < n; ++j) {
            const int64_t c = a[static_cast<size_t>(i)][static_cast<size_t>(j)];
            out.push_back({static_cast<int32_t>(i), static_cast<int32_t>(j), src_off,
                           dst_off[static_cast<size_t>(j)], c, 0, 1, false});
            src_off += c;
            dst_off[static_cast<size_t>(j)] += c;
          }
        }
      });
      break;
    }
    case Op::kBroadcast: {
      const int32_t root = ctx.root;
      one("broadcast", [=](auto& out) {
        for (int64_t d = 1; d < n; ++d)
          out.push_back({root, static_cast<int32_t>((root + d) % n), 0, 0, count, 0, 0, false});
      });
      break;
    }
    case Op::kPermute: {
      const auto perm = ctx.perm;
      one("permute", [=](auto& out) {
        for (int64_t i = 0; i < n; ++i)
          out.push_back(
              {static_cast<int32_t>(i), perm[static_cast<size_t>(i)], 0, 0, count, 0, 1, false});
      });
      break;
    }
  }
  return plan;
}

}  // namespace

Algorithm mesh_algorithm() {
  return {"mesh",
          "direct: every rank writes to every destination in one step through the fabric's "
          "routing; all-reduce = direct reduce-scatter + direct all-gather",
          [](const Context& ctx) -> std::string {
            if (ctx.ranks() > kMaxRanks)
              return fmt::format("mesh sends r(r-1) transfers a step; refused above {} ranks",
                                 kMaxRanks);
            return "";
          },
          build};
}

}  // namespace trnsim::fabric
