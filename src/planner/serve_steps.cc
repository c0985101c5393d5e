#include "planner/serve_steps.h"

#include <fmt/format.h>

#include <algorithm>

#include "arch/arch.h"
#include "base/error.h"
#include "fabric/system.h"

namespace trnsim::planner {

std::optional<KvBuckets> parse_kv_buckets(std::string_view s) {
  if (s == "pow2") return KvBuckets::kPow2;
  if (s == "max") return KvBuckets::kMax;
  if (s == "exact") return KvBuckets::kExact;
  return std::nullopt;
}

std::string_view kv_buckets_name(KvBuckets k) {
  switch (k) {
    case KvBuckets::kPow2:
      return "pow2";
    case KvBuckets::kMax:
      return "max";
    case KvBuckets::kExact:
      return "exact";
  }
  return "pow2";
}

int64_t pow2_bucket(int64_t n, int64_t cap) {
  int64_t b = 128;
  while (b < n && b < cap) b *= 2;
  return std::min(b, cap) < n ? n : std::min(b, cap);
}

StepCosts::StepCosts(const graph::ModelConfig& m, graph::ModelRunOptions base)
    : m_(m), base_(std::move(base)) {
  base_.kv_cache = true;
  base_.kernel_caches = &pool_;
}

const graph::ModelResult& StepCosts::run(graph::ModelRunOptions o) {
  last_ = graph::run_model(m_, o);
  if (runs_++ == 0) {
    // The first run settles what the options left open (TP: every core the model splits
    // over), the chips the ranks take and the chip's power model.
    const arch::ChipSpec chip =
        arch::load_chip(last_.chip, fabric::split_overrides(base_.overrides).chip);
    const int64_t cores = int64_t{last_.tp} * last_.lnc;
    chips_ = std::max<int64_t>(1, (cores + chip.chip.cores - 1) / chip.chip.cores);
    power_ = power_model_if_any(chip);
  }
  base_.tp = last_.tp;
  base_.lnc = last_.lnc;
  return last_;
}

StepCost StepCosts::cost_of(const graph::ModelResult& r) const {
  StepCost c;
  c.ms = r.latency_us / 1e3;
  c.flops = r.flops;
  c.hbm_bytes = static_cast<double>(r.hbm_bytes);
  // All-reduces among ranks of one chip stay on it (their HBM traffic is counted already).
  c.link_bytes = chips_ > 1 ? static_cast<double>(r.collective_bytes) : 0.0;
  for (const graph::OpRow& row : r.rows)
    if (row.kind == "attention") c.attention_ms += row.total_us() / 1e3;
  return c;
}

const StepCost& StepCosts::prefill(int64_t batch, int64_t bucket, int64_t past) {
  const auto key = std::make_tuple(batch, bucket, past);
  if (const auto it = prefill_cost_.find(key); it != prefill_cost_.end()) return it->second;
  graph::ModelRunOptions o = base_;
  o.batch = batch;
  o.seq = bucket;
  o.past = past;
  prefill_ = run(o);
  return prefill_cost_[key] = cost_of(prefill_);
}

const StepCost& StepCosts::decode(int64_t batch, int64_t kv) {
  if (kv < 1) throw InputError("serve", "kv", fmt::format("{} positions: at least 1", kv));
  const auto key = std::make_pair(batch, kv);
  if (const auto it = decode_cost_.find(key); it != decode_cost_.end()) return it->second;
  graph::ModelRunOptions o = base_;
  o.batch = batch;
  o.seq = 1;
  o.past = kv - 1;
  decode_ = run(o);
  return decode_cost_[key] = cost_of(decode_);
}

const StepCost& StepCosts::verify(int64_t batch, int64_t kv, int64_t tokens) {
  if (tokens < 1 || kv < tokens)
    throw InputError("serve", "speculation",
                     fmt::format("{} tokens verified against {} positions", tokens, kv));
  const auto key = std::make_tuple(batch, kv, tokens);
  if (const auto it = verify_cost_.find(key); it != verify_cost_.end()) return it->second;
  graph::ModelRunOptions o = base_;
  o.batch = batch;
  o.seq = tokens;
  o.past = kv - tokens;
  decode_ = run(o);
  return verify_cost_[key] = cost_of(decode_);
}

StepCost StepCosts::chunk_step(int64_t chunk, int64_t past, int64_t batch, int64_t kv) {
  const StepCost base = prefill(1, chunk, 0);
  const StepCost own = prefill(1, chunk, past);
  StepCost c = base;
  c.ms = base.ms - base.attention_ms + own.attention_ms;
  c.attention_ms = own.attention_ms;
  if (batch > 0) {
    const double attn = decode(batch, kv).attention_ms;
    c.ms += attn;
    c.attention_ms += attn;
  }
  return c;
}

std::optional<Energy> StepCosts::energy(const StepCost& c, int64_t steps) const {
  if (!power_) return std::nullopt;
  const auto n = static_cast<double>(steps);
  return energy_of(*power_, n * c.ms / 1e3, chips_, n * c.flops, n * c.hbm_bytes, n * c.link_bytes);
}

std::optional<Energy> StepCosts::idle_energy(double ms) const {
  if (!power_) return std::nullopt;
  return energy_of(*power_, ms / 1e3, chips_, 0, 0, 0);
}

std::string StepCosts::where() const {
  const graph::ModelResult& r = runs_ > 0 ? last_ : prefill_;
  return r.system.empty() ? r.chip : r.system;
}

}  // namespace trnsim::planner
