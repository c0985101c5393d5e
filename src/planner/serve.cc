#include "planner/serve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "base/error.h"

namespace trnsim::planner {

graph::ModelRunOptions step_options(const ServeOptions& o) {
  graph::ModelRunOptions r;
  r.system = o.system;
  r.chip = o.chip;
  r.overrides = o.overrides;
  r.tp = o.tp;
  r.lnc = o.lnc;
  r.ep = o.ep;
  r.weights = o.weights;
  r.quantize_mlp_only = o.quantize_mlp_only;
  r.search_tilings = o.search_tilings;
  r.kv_cache = true;
  r.kv_cache_dtype = o.kv_cache_dtype;
  r.runtime = o.runtime;
  return r;
}

ServeOptions resolve(const ServeOptions& o) {
  if (o.speculation_length < 0 || o.speculation_length > 64)
    throw InputError("serve", "speculation-length", "0 (none) to 64 drafted tokens");
  if (o.eagle && o.draft)
    throw InputError("serve", "eagle", "EAGLE's draft is the target's own head: no draft model");
  if (o.eagle && o.speculation_length < 1)
    throw InputError("serve", "speculation-length", "EAGLE drafts at least one token");
  if (o.speculation_length > 0) {
    if (!o.draft && !o.eagle)
      throw InputError("serve", "draft-model", "speculation needs a draft model (or --eagle)");
    if (o.kv_buckets == KvBuckets::kExact)
      throw InputError("serve", "kv-buckets", "speculation runs on compiled buckets: pow2 or max");
  }
  if (!(o.acceptance >= 0 && o.acceptance <= 1))
    throw InputError("serve", "acceptance", "a probability, 0 to 1");
  if (o.batch < 1) throw InputError("serve", "batch", "at least 1");
  if (o.input_tokens < 1 || o.output_tokens < 1)
    throw InputError("serve", o.input_tokens < 1 ? "input-tokens" : "output-tokens", "at least 1");
  if (o.decode_samples < 1) throw InputError("serve", "decode-samples", "at least 1");
  if (o.cached_prefix < 0 || o.cached_prefix >= o.input_tokens)
    throw InputError("serve", "cached-prefix",
                     fmt::format("{} cached tokens of a {}-token prompt: 0 to {} (at least the "
                                 "prompt's last token is prefilled, to give the first output)",
                                 o.cached_prefix, o.input_tokens, o.input_tokens - 1));
  ServeOptions r = o;
  if (r.compiled_batch == 0) r.compiled_batch = r.batch;
  if (o.prefill_chunk != 0) {
    if (o.prefill_chunk < 128)
      throw InputError(
          "serve", "prefill-chunk",
          fmt::format("{} token slots: at least 128 (a tile of tokens)", o.prefill_chunk));
    if (o.prefill_chunk <= r.compiled_batch)
      throw InputError("serve", "prefill-chunk",
                       fmt::format("{} token slots leave no room for a prompt beside {} decode "
                                   "tokens (the compiled batch)",
                                   o.prefill_chunk, r.compiled_batch));
    if (o.speculation_length > 0)
      throw InputError("serve", "prefill-chunk", "not with speculative decoding");
    if (o.ctx_batch > 1)
      throw InputError("serve", "ctx-batch", "chunked prefill fills one prompt at a time");
    r.ctx_batch = 1;
  }
  if (r.compiled_batch < r.batch)
    throw InputError(
        "serve", "compiled-batch",
        fmt::format("{} sequences cannot decode a batch of {}", r.compiled_batch, r.batch));
  if (r.ctx_batch == 0) r.ctx_batch = r.batch;
  if (r.ctx_batch < 1 || r.ctx_batch > r.compiled_batch)
    throw InputError(
        "serve", "ctx-batch",
        fmt::format("{}: 1 to the compiled batch ({})", r.ctx_batch, r.compiled_batch));
  const int64_t positions = o.input_tokens + o.output_tokens;
  if (r.max_seq == 0) r.max_seq = pow2_bucket(positions, int64_t{1} << 40);
  if (r.max_seq < positions)
    throw InputError("serve", "max-seq",
                     fmt::format("{} positions cannot hold {} input and {} output tokens",
                                 r.max_seq, o.input_tokens, o.output_tokens));
  const int64_t fresh = o.input_tokens - o.cached_prefix;  // the prompt's tokens to prefill
  if (r.bucket == 0) r.bucket = pow2_bucket(fresh, r.max_seq - o.cached_prefix);
  if (r.bucket < fresh)
    throw InputError("serve", "bucket",
                     fmt::format("{} positions cannot hold a {}-token prompt{}", r.bucket, fresh,
                                 o.cached_prefix > 0 ? " (after its cached prefix)" : ""));
  if (r.bucket + o.cached_prefix > r.max_seq)
    throw InputError(
        "serve", "bucket",
        fmt::format("{} positions{}, more than the compiled sequence ({})", r.bucket,
                    o.cached_prefix > 0
                        ? fmt::format(" after a {}-token cached prefix", o.cached_prefix)
                        : "",
                    r.max_seq));
  return r;
}

ServeResult serve(const graph::ModelConfig& m, const ServeOptions& opts) {
  const ServeOptions o = resolve(opts);
  ServeResult res;
  res.model = m.name;
  res.batch = o.batch;
  res.input_tokens = o.input_tokens;
  res.output_tokens = o.output_tokens;
  res.bucket = o.bucket;
  res.cached_prefix = o.cached_prefix;
  res.prefill_chunk = o.prefill_chunk;
  res.compiled_batch = o.compiled_batch;
  res.ctx_batch = o.ctx_batch;
  res.max_seq = o.max_seq;
  res.kv_buckets = o.kv_buckets;
  res.speculation_length = o.speculation_length;
  res.acceptance = o.acceptance;
  // EAGLE: the draft is the target's head.
  std::optional<graph::ModelConfig> eagle;
  if (o.eagle) eagle = graph::eagle_draft_of(m);
  const graph::ModelConfig* draft_model = eagle ? &*eagle : o.draft;
  if (draft_model) res.draft_model = draft_model->name;

  StepCosts steps(m, step_options(o));
  // The batch's prompts in prefills of ctx_batch each (the last one padded), one after another;
  // a request's first token comes with its prefill.
  const int64_t prefills = (o.batch + o.ctx_batch - 1) / o.ctx_batch;
  // Chunked: a prompt is ceil(rest / chunk) steps of the chunk graph, each after the positions
  // before it (no decode tokens beside them: the batch's prompts come first).
  StepCost chunked;
  for (int64_t p = o.cached_prefix; o.prefill_chunk > 0 && p < o.input_tokens;
       p += o.prefill_chunk) {
    const StepCost c = steps.chunk_step(o.prefill_chunk, p, 0, 0);
    chunked.ms += c.ms;
    chunked.flops += c.flops;
    chunked.hbm_bytes += c.hbm_bytes;
    chunked.link_bytes += c.link_bytes;
  }
  const StepCost& prefill_cost =
      o.prefill_chunk > 0 ? chunked : steps.prefill(o.ctx_batch, o.bucket, o.cached_prefix);
  const double prefill = prefill_cost.ms;
  res.energy = steps.energy(prefill_cost, prefills);
  res.prefill = steps.last_prefill();
  double first_tokens = 0;
  for (int64_t i = 0; i < prefills; ++i)
    first_tokens += prefill * static_cast<double>(i + 1) *
                    static_cast<double>(std::min(o.ctx_batch, o.batch - i * o.ctx_batch));
  res.ttft_ms = first_tokens / static_cast<double>(o.batch);
  res.tp = steps.tp();
  res.ep = o.ep;
  res.weights = o.weights + (o.quantize_mlp_only && o.weights != "bf16" ? " (MLP)" : "");
  res.kv_cache_dtype = o.kv_cache_dtype;
  res.lnc = steps.lnc();
  res.where = steps.where();

  // Decode steps read KV lengths from the first generated token's to the last's.
  const int64_t first = o.input_tokens + 1, last = o.input_tokens + o.output_tokens - 1;
  if (o.kv_buckets == KvBuckets::kExact) {
    const int n = last > first ? o.decode_samples : 1;
    for (int i = 0; i < n; ++i) {
      const int64_t kv = n == 1 ? first : first + (last - first) * i / (n - 1);
      res.decode_ms.emplace_back(kv, steps.decode_ms(o.compiled_batch, kv));
    }
    // Energy: every step as the samples' mean (a what-if mode; its time is interpolated).
    if (res.energy && o.output_tokens > 1) {
      Energy sum;
      for (const auto& [kv, ms] : res.decode_ms)
        sum += *steps.energy(steps.decode(o.compiled_batch, kv));
      *res.energy += scaled(sum, static_cast<double>(o.output_tokens - 1) /
                                     static_cast<double>(res.decode_ms.size()));
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
  } else {
    // Each step at its bucket: the distinct buckets timed once, weighted by their steps (one
    // step, the first, when there is a single output token).
    std::map<int64_t, int64_t> count;
    for (int64_t kv = first; kv <= std::max(first, last); ++kv)
      ++count[o.kv_buckets == KvBuckets::kMax ? o.max_seq : pow2_bucket(kv, o.max_seq)];
    // Speculative decoding: per iteration the draft model decodes k tokens and the target
    // verifies them with one more in a single step of k + 1 positions; with each drafted token
    // accepted with probability a (independently, until the first rejection) an iteration
    // yields (1 - a^(k+1)) / (1 - a) tokens (Leviathan et al.). A token's cost is then the
    // iteration's over that, at the bucket the iteration reads.
    std::optional<StepCosts> draft;
    const int64_t k = o.speculation_length;
    double per_iteration = 1;
    if (k > 0) {
      // The draft on the same system and cores, split as far as its heads allow.
      graph::ModelRunOptions d = step_options(o);
      d.tp = 0;
      d.ep = 1;  // a dense draft
      draft.emplace(*draft_model, d);
      const double a = o.acceptance;
      per_iteration = a < 1 ? (1 - std::pow(a, static_cast<double>(k + 1))) / (1 - a)
                            : static_cast<double>(k + 1);
      res.tokens_per_iteration = per_iteration;
    }
    double total = 0;
    int64_t n = 0;
    for (const auto& [kv, c] : count) {
      double ms = 0;
      std::optional<Energy> e;
      if (k > 0) {
        const StepCost& d = draft->decode(o.compiled_batch, kv);
        const StepCost& v = steps.verify(o.compiled_batch, kv, std::min(k + 1, kv));
        const double per_token = 1 / per_iteration;
        ms = (static_cast<double>(k) * d.ms + v.ms) * per_token;
        if (res.energy) {
          e = scaled(*draft->energy(d), static_cast<double>(k * c) * per_token);
          *e += scaled(*steps.energy(v), static_cast<double>(c) * per_token);
        }
      } else {
        ms = steps.decode_ms(o.compiled_batch, kv);
        e = steps.energy(steps.decode(o.compiled_batch, kv), c);
      }
      res.decode_ms.emplace_back(kv, ms);
      res.decode_steps.push_back(c);
      if (res.energy && o.output_tokens > 1) *res.energy += *e;
      total += ms * static_cast<double>(c);
      n += c;
    }
    res.tpot_ms = total / static_cast<double>(n);
  }
  res.decode = steps.last_decode();
  // The last request's first token, then its output - 1 decode steps.
  res.e2e_ms = prefill * static_cast<double>(prefills) +
               static_cast<double>(o.output_tokens - 1) * res.tpot_ms;
  res.output_tokens_per_s = static_cast<double>(o.batch * o.output_tokens) / (res.e2e_ms / 1e3);
  res.power = steps.power();
  if (res.energy) {
    res.joules_per_output_token =
        res.energy->joules() / static_cast<double>(o.batch * o.output_tokens);
    res.output_tokens_per_s_per_mw = res.output_tokens_per_s / (res.energy->mean_power_w() / 1e6);
  }
  return res;
}

nlohmann::json ServeResult::to_json() const {
  nlohmann::json samples = nlohmann::json::array();
  for (size_t i = 0; i < decode_ms.size(); ++i) {
    nlohmann::json j = {{"kv_tokens", decode_ms[i].first}, {"step_ms", decode_ms[i].second}};
    if (i < decode_steps.size()) j["steps"] = decode_steps[i];
    samples.push_back(std::move(j));
  }
  nlohmann::json out = {
      {"model", model},
      {"where", where},
      {"tp", tp},
      {"ep", ep},
      {"weights", weights},
      {"kv_cache_dtype", kv_cache_dtype},
      {"lnc", lnc},
      {"batch", batch},
      {"input_tokens", input_tokens},
      {"output_tokens", output_tokens},
      {"prefill_bucket", bucket},
      {"cached_prefix", cached_prefix},
      {"prefill_chunk", prefill_chunk},
      {"compiled_batch", compiled_batch},
      {"ctx_batch", ctx_batch},
      {"max_seq", max_seq},
      {"kv_buckets", kv_buckets_name(kv_buckets)},
      {"speculation", speculation_length > 0
                          ? nlohmann::json{{"draft_model", draft_model},
                                           {"length", speculation_length},
                                           {"acceptance", acceptance},
                                           {"tokens_per_iteration", tokens_per_iteration}}
                          : nlohmann::json(nullptr)},
      {"ttft_ms", ttft_ms},
      {"tpot_ms", tpot_ms},
      {"e2e_ms", e2e_ms},
      {"output_tokens_per_s", output_tokens_per_s},
      {"decode_samples", samples},
      {"fits", prefill.fits() && decode.fits()},
      {"memory_per_core_bytes", decode.weight_bytes + decode.activation_bytes + decode.cache_bytes},
      {"prefill", prefill.to_json()},
      {"decode", decode.to_json()}};
  add_energy_json(out, energy, power, joules_per_output_token, output_tokens_per_s_per_mw);
  return out;
}

std::string ServeResult::text() const {
  std::string out =
      fmt::format("{} on {} (tp {}{}), batch {}, {} input / {} output tokens (prefill bucket {})\n",
                  model, where, tp, lnc > 1 ? fmt::format(", LNC={}", lnc) : "", batch,
                  input_tokens, output_tokens, bucket);
  out += fmt::format("compiled: decode batch {}, prefill batch {}, {} positions, KV buckets {}\n",
                     compiled_batch, ctx_batch, max_seq, kv_buckets_name(kv_buckets));
  if (weights != "bf16")
    out += fmt::format("quantized weights: {}, per-channel scales (the decoder layers' linears)\n",
                       weights);
  if (kv_cache_dtype != "bf16")
    out += fmt::format("KV cache: {} (keys and values scaled, clamped and rounded as written; "
                       "memory per core {:.2f} GiB of cache)\n",
                       kv_cache_dtype, static_cast<double>(decode.cache_bytes) / 1073741824.0);
  if (cached_prefix > 0)
    out += fmt::format(
        "prefix caching: the first {} tokens of each prompt are in the KV cache; "
        "the prefill runs the other {}\n",
        cached_prefix, input_tokens - cached_prefix);
  if (prefill_chunk > 0)
    out += fmt::format("chunked prefill: steps of {} token slots\n", prefill_chunk);
  if (speculation_length > 0)
    out += fmt::format(
        "speculative decoding: {} drafts {} tokens an iteration, each accepted with p = {}: {:.2f} "
        "tokens per iteration\n",
        draft_model, speculation_length, acceptance, tokens_per_iteration);
  out +=
      fmt::format("TTFT {:.2f} ms, TPOT {:.2f} ms, end to end {:.1f} ms, {:.1f} output tokens/s\n",
                  ttft_ms, tpot_ms, e2e_ms, output_tokens_per_s);
  if (energy)
    out += fmt::format(
        "energy {:.3g} J on {} chip{} ({:.0f} W mean: static {:.0f} %, TensorE {:.0f} %, HBM "
        "{:.0f} %, links {:.0f} %), {:.3g} J per output token, {:.3g} output tokens/s per MW\n",
        energy->joules(), energy->chips, energy->chips > 1 ? "s" : "", energy->mean_power_w(),
        100 * energy->static_j / energy->joules(), 100 * energy->tensor_j / energy->joules(),
        100 * energy->hbm_j / energy->joules(), 100 * energy->link_j / energy->joules(),
        joules_per_output_token, output_tokens_per_s_per_mw);
  out += "decode step by KV positions read:";
  for (size_t i = 0; i < decode_ms.size(); ++i)
    out += fmt::format(" {}: {:.2f} ms{};", decode_ms[i].first, decode_ms[i].second,
                       i < decode_steps.size() ? fmt::format(" x {}", decode_steps[i]) : "");
  out += "\n\nprefill:\n" + prefill.table() + "\nlast decode step:\n" + decode.table();
  return out;
}

}  // namespace trnsim::planner
