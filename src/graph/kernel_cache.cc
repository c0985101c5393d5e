#include "graph/kernel_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "chip/chip_run.h"

namespace trnsim::graph {

namespace {
constexpr int64_t kProbeTokens = 2048;
constexpr size_t kMaxCandidates = 6;
}  // namespace

KernelCache::KernelCache(const arch::ChipSpec& chip, int tp, const fabric::SystemSpec* system,
                         bool search, int lnc, const std::string& runtime)
    : chip_(chip), search_(search) {
  const int stacks = chip::hbm_stacks(chip);
  copies_ = std::max(1, std::min(tp * lnc, chip.chip.cores / std::max(1, stacks)));
  if (tp * lnc > 1 && system != nullptr) {
    fabric::Placement pl;
    pl.unit = fabric::RankUnit::kCore;
    // Ranks of lnc cores each; one rank of several cores reduces among its physical cores.
    pl.ranks = tp > 1 ? tp : lnc;
    pl.lnc = tp > 1 ? lnc : 1;
    fabric_ = std::make_unique<fabric::Fabric>(*system, fabric::load_runtime(runtime), pl);
  }
}

KernelTiming KernelCache::simulate(const Kernel& k, const ops::LinearTiling* tiling) {
  ++simulated_;
  KernelTiming t;
  if (is_collective(k.kind)) {
    if (!fabric_) throw InternalError("a collective without tensor-parallel ranks");
    fabric::CollectiveRequest req;
    req.op = k.kind == KernelKind::kAllReduce   ? fabric::Op::kAllReduce
             : k.kind == KernelKind::kAllGather ? fabric::Op::kAllGather
                                                : fabric::Op::kReduceScatter;
    req.bytes = k.collective_bytes;
    req.dtype = k.collective_dtype;
    req.placement = fabric_->placement();
    const fabric::CollectiveResult r = fabric_->simulate(req);
    t.time = r.device;
    t.algorithm = r.algorithm;
    t.bound = "fabric";
    return t;
  }
  Kernel kk = k;
  if (tiling != nullptr) kk.linear.tiling = *tiling;
  t = run_program(build_program(chip_, kk), std::string(k.kind_name()), k.describe());
  t.tiling = kk.linear.tiling;
  return t;
}

KernelTiming KernelCache::run_program(const isa::Program& p, const std::string& what,
                                      const std::string& detail) {
  std::vector<const isa::Program*> progs(static_cast<size_t>(copies_), &p);
  chip::ChipRunner runner(chip_, progs, 1, core::RunMode::kTimingOnly);
  const chip::ChipResult r = runner.run();
  if (!r.ok())
    throw InputError(what, detail,
                     fmt::format("the kernel faulted on the simulated core:\n{}", r.faults_text()));
  const core::TimingResult& c = r.cores.front();
  KernelTiming t;
  t.time = r.total;
  t.hbm_bytes = c.dma.hbm_read_bytes + c.dma.hbm_write_bytes;
  t.instructions = c.instructions;
  t.bound = c.bound().verdict;
  return t;
}

const KernelTiming* KernelCache::time_segment(const std::vector<SegmentItem>& items) {
  const std::string key = segment_key(items);
  if (auto it = segments_.find(key); it != segments_.end()) {
    return it->second ? &*it->second : nullptr;
  }
  std::optional<isa::Program> p;
  try {
    p = build_segment(chip_, items);
  } catch (const InputError&) {
    segments_.emplace(key, std::nullopt);  // not buildable as one program: timed apart
    return nullptr;
  }
  ++simulated_;
  std::string detail;
  for (const SegmentItem& it : items)
    detail += (detail.empty() ? "" : " + ") + it.kernel.describe();
  return &*segments_.emplace(key, run_program(*p, "segment", detail)).first->second;
}

ops::LinearTiling KernelCache::search(const Kernel& k) {
  const std::vector<ops::LinearTiling> cands = ops::linear_tilings(chip_, k.linear);
  if (!search_ || cands.size() == 1) return cands.front();
  Kernel probe = k;
  probe.linear.tokens = std::min(k.linear.tokens, kProbeTokens);
  const std::string key = probe.key();
  if (auto it = tilings_.find(key); it != tilings_.end()) return it->second;
  ops::LinearTiling best = cands.front();
  Picoseconds best_time{0};
  // Candidates beyond the SBUF estimate are tried too, up to kMaxCandidates in all.
  for (size_t i = 0; i < cands.size() && i < kMaxCandidates; ++i) {
    const ops::LinearTiling& c = cands[i];
    KernelTiming t;
    try {
      t = simulate(probe, &c);
    } catch (const InputError&) {
      continue;  // its tiles cannot be placed together
    }
    if (best_time.v == 0 || t.time < best_time) {
      best_time = t.time;
      best = c;
    }
  }
  tilings_[key] = best;
  return best;
}

ops::LinearTiling KernelCache::tiling(const Kernel& k) {
  if (k.kind != KernelKind::kLinear) return {};
  return search(k);
}

const KernelTiming& KernelCache::time(const Kernel& k) {
  const std::string key = k.key();
  if (auto it = cache_.find(key); it != cache_.end()) {
    ++hits_;
    return it->second;
  }
  KernelTiming t;
  if (k.kind == KernelKind::kLinear) {
    const ops::LinearTiling best = search(k);
    t = simulate(k, &best);
    t.candidates = static_cast<int>(ops::linear_tilings(chip_, k.linear).size());
    t.warm_time = t.time;
    if (warm_) {
      Kernel warm = k;
      warm.linear.weights_prefetched = true;
      t.warm_time = simulate(warm, &best).time;
    }
  } else {
    t = simulate(k, nullptr);
  }
  return cache_.emplace(key, t).first->second;
}

}  // namespace trnsim::graph
