#include "planner/serve_steps.h"

#include <fmt/format.h>

#include "base/error.h"

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
  ++runs_;
  // The first run settles what the options left open (TP: every core the model splits over).
  base_.tp = last_.tp;
  base_.lnc = last_.lnc;
  return last_;
}

double StepCosts::prefill_ms(int64_t batch, int64_t bucket) {
  const auto key = std::make_pair(batch, bucket);
  if (const auto it = prefill_ms_.find(key); it != prefill_ms_.end()) return it->second;
  graph::ModelRunOptions o = base_;
  o.batch = batch;
  o.seq = bucket;
  o.past = 0;
  prefill_ = run(o);
  return prefill_ms_[key] = prefill_.latency_us / 1e3;
}

double StepCosts::decode_ms(int64_t batch, int64_t kv) {
  if (kv < 1) throw InputError("serve", "kv", fmt::format("{} positions: at least 1", kv));
  const auto key = std::make_pair(batch, kv);
  if (const auto it = decode_ms_.find(key); it != decode_ms_.end()) return it->second;
  graph::ModelRunOptions o = base_;
  o.batch = batch;
  o.seq = 1;
  o.past = kv - 1;
  decode_ = run(o);
  return decode_ms_[key] = decode_.latency_us / 1e3;
}

std::string StepCosts::where() const {
  const graph::ModelResult& r = runs_ > 0 ? last_ : prefill_;
  return r.system.empty() ? r.chip : r.system;
}

}  // namespace trnsim::planner
