#include "planner/serve.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"

namespace trnsim::planner {

namespace {

graph::ModelRunOptions run_options(const ServeOptions& o) {
  graph::ModelRunOptions r;
  r.system = o.system;
  r.chip = o.chip;
  r.overrides = o.overrides;
  r.tp = o.tp;
  r.lnc = o.lnc;
  r.batch = o.batch;
  r.search_tilings = o.search_tilings;
  r.kv_cache = true;
  r.runtime = o.runtime;
  return r;
}

}  // namespace

ServeResult serve(const graph::ModelConfig& m, const ServeOptions& o) {
  if (o.batch < 1) throw InputError("serve", "batch", "at least 1");
  if (o.input_tokens < 1 || o.output_tokens < 1)
    throw InputError("serve", o.input_tokens < 1 ? "input-tokens" : "output-tokens", "at least 1");
  if (o.decode_samples < 1) throw InputError("serve", "decode-samples", "at least 1");
  int64_t bucket = o.bucket;
  if (bucket == 0) {
    bucket = 128;
    while (bucket < o.input_tokens) bucket *= 2;
  }
  if (bucket < o.input_tokens)
    throw InputError(
        "serve", "bucket",
        fmt::format("{} positions cannot hold a {}-token prompt", bucket, o.input_tokens));
  ServeResult res;
  res.model = m.name;
  res.batch = o.batch;
  res.input_tokens = o.input_tokens;
  res.output_tokens = o.output_tokens;
  res.bucket = bucket;

  graph::ModelRunOptions pre = run_options(o);
  pre.seq = bucket;
  res.prefill = graph::run_model(m, pre);
  res.ttft_ms = res.prefill.latency_us / 1e3;
  res.tp = res.prefill.tp;
  res.lnc = res.prefill.lnc;
  res.where = res.prefill.system.empty() ? res.prefill.chip : res.prefill.system;

  // Decode steps at KV lengths from the first generated token's to the last's.
  const int64_t first = o.input_tokens + 1, last = o.input_tokens + o.output_tokens - 1;
  const int n = last > first ? o.decode_samples : 1;
  graph::ModelRunOptions dec = run_options(o);
  dec.tp = res.tp;
  dec.seq = 1;
  for (int i = 0; i < n; ++i) {
    const int64_t kv = n == 1 ? first : first + (last - first) * i / (n - 1);
    dec.past = kv - 1;
    res.decode = graph::run_model(m, dec);
    res.decode_ms.emplace_back(kv, res.decode.latency_us / 1e3);
  }
  // Mean over every step: trapezoids between the samples (linear in the KV length).
  if (res.decode_ms.size() == 1) {
    res.tpot_ms = res.decode_ms[0].second;
  } else {
    double area = 0;
    for (size_t i = 1; i < res.decode_ms.size(); ++i)
      area += 0.5 * (res.decode_ms[i].second + res.decode_ms[i - 1].second) *
              static_cast<double>(res.decode_ms[i].first - res.decode_ms[i - 1].first);
    res.tpot_ms = area / static_cast<double>(last - first);
  }
  res.e2e_ms = res.ttft_ms + static_cast<double>(o.output_tokens - 1) * res.tpot_ms;
  res.output_tokens_per_s = static_cast<double>(o.batch * o.output_tokens) / (res.e2e_ms / 1e3);
  return res;
}

nlohmann::json ServeResult::to_json() const {
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& [kv, ms] : decode_ms) samples.push_back({{"kv_tokens", kv}, {"step_ms", ms}});
  return {
      {"model", model},
      {"where", where},
      {"tp", tp},
      {"lnc", lnc},
      {"batch", batch},
      {"input_tokens", input_tokens},
      {"output_tokens", output_tokens},
      {"prefill_bucket", bucket},
      {"ttft_ms", ttft_ms},
      {"tpot_ms", tpot_ms},
      {"e2e_ms", e2e_ms},
      {"output_tokens_per_s", output_tokens_per_s},
      {"decode_samples", samples},
      {"fits", prefill.fits() && decode.fits()},
      {"memory_per_core_bytes", decode.weight_bytes + decode.activation_bytes + decode.cache_bytes},
      {"prefill", prefill.to_json()},
      {"decode", decode.to_json()}};
}

std::string ServeResult::text() const {
  std::string out =
      fmt::format("{} on {} (tp {}{}), batch {}, {} input / {} output tokens (prefill bucket {})\n",
                  model, where, tp, lnc > 1 ? fmt::format(", LNC={}", lnc) : "", batch,
                  input_tokens, output_tokens, bucket);
  out +=
      fmt::format("TTFT {:.2f} ms, TPOT {:.2f} ms, end to end {:.1f} ms, {:.1f} output tokens/s\n",
                  ttft_ms, tpot_ms, e2e_ms, output_tokens_per_s);
  out += "decode step by KV length:";
  for (const auto& [kv, ms] : decode_ms) out += fmt::format(" {}: {:.2f} ms;", kv, ms);
  out += "\n\nprefill:\n" + prefill.table() + "\nlast decode step:\n" + decode.table();
  return out;
}

}  // namespace trnsim::planner
