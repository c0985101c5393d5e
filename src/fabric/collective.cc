#include "fabric/collective.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace trnsim::fabric {

double CollectiveResult::algbw_gib_s() const {
  if (time.v <= 0) return 0;
  return static_cast<double>(bytes) / (static_cast<double>(time.v) * 1e-12) /
         static_cast<double>(kGiB);
}

double CollectiveResult::busbw_gib_s() const { return algbw_gib_s() * busbw_factor(op, ranks); }

Fabric::Fabric(SystemSpec system, RuntimeSpec runtime, Placement placement)
    : system_(std::move(system)),
      runtime_(std::move(runtime)),
      placement_(placement),
      net_(std::make_unique<Network>(system_, placement)) {}

Context Fabric::context(const CollectiveRequest& req) const {
  Context ctx;
  ctx.op = req.op;
  ctx.elem_bytes = req.dtype.storage_bytes;
  ctx.net = net_.get();
  ctx.runtime = &runtime_;
  ctx.intra = req.intra;
  ctx.inter = req.inter;
  if (req.ring_directions != 1 && req.ring_directions != 2)
    throw InputError("--ring-directions", std::to_string(req.ring_directions), "expected 1 or 2");
  ctx.ring_directions = req.ring_directions;
  const int64_t n = net_->ranks();
  ctx.count = req.bytes / ctx.elem_bytes;
  ctx.root = req.root;
  if (req.root < 0 || req.root >= n) throw InputError("--root", "", "root is not a rank");
  if (req.op == Op::kPermute) {
    ctx.perm = req.perm;
    if (ctx.perm.empty())
      for (int64_t i = 0; i < n; ++i) ctx.perm.push_back(static_cast<int32_t>((i + 1) % n));
    if (static_cast<int64_t>(ctx.perm.size()) != n)
      throw InputError("--perm", "", "a permutation needs one destination per rank");
    for (int32_t d : ctx.perm)
      if (d < 0 || d >= n) throw InputError("--perm", "", fmt::format("{} is not a rank", d));
  }
  if (req.op == Op::kAllToAllV) {
    ctx.a2av = req.a2av;
    if (ctx.a2av.empty())
      ctx.a2av.assign(static_cast<size_t>(n),
                      std::vector<int64_t>(static_cast<size_t>(n), ctx.count / n));
    if (static_cast<int64_t>(ctx.a2av.size()) != n)
      throw InputError("a2av", "", "an all-to-all-v needs an r x r count matrix");
    for (const auto& row : ctx.a2av) {
      if (static_cast<int64_t>(row.size()) != n)
        throw InputError("a2av", "", "an all-to-all-v needs an r x r count matrix");
    }
  }
  return ctx;
}

const Algorithm& Fabric::choose(const Context& ctx, const std::string& forced) const {
  if (forced.empty() || forced == "auto") return select_algorithm(ctx);
  const Algorithm& a = find_algorithm(forced);
  if (std::string why = a.why_not(ctx); !why.empty()) throw InputError("--algorithm", forced, why);
  return a;
}

CollectiveResult Fabric::simulate(const CollectiveRequest& req) const {
  Context ctx = context(req);
  ctx.sizes_only = true;
  const Algorithm& algo = choose(ctx, req.algorithm);
  const Plan plan = algo.build(ctx);
  CollectiveResult r;
  r.op = req.op;
  r.algorithm = plan.algorithm;
  r.ranks = net_->ranks();
  r.count = ctx.count;
  r.bytes = ctx.count * ctx.elem_bytes;
  r.dtype = req.dtype.name();
  r.timing = time_plan(plan, ctx, req.folded);
  r.device = r.timing.device;
  // Launch: the call costs launch_us of software time; the device starts after
  // (launch_us - overlap_us). docs/fabric.md, "Launch cost".
  const auto launch = Picoseconds(std::llround(runtime_.launch_us * 1e6));
  const auto start = Picoseconds(std::llround((runtime_.launch_us - runtime_.overlap_us) * 1e6));
  r.time = std::max(launch, start + r.device);
  return r;
}

std::string Fabric::run(const CollectiveRequest& req, Buffers& buf) const {
  const Context ctx = context(req);
  const Algorithm& algo = choose(ctx, req.algorithm);
  if (static_cast<int64_t>(buf.data.size()) != net_->ranks())
    throw InputError("", "data", "one buffer per rank");
  const Plan plan = algo.build(ctx);
  run_functional(plan, req.dtype, system_.chip.numerics.policy(), buf);
  return plan.algorithm;
}

}  // namespace trnsim::fabric
