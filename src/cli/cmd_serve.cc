// `trnsim serve`: time to first token and time per output token of one batch of requests
// (planner/serve.h), with the prefill's and the last decode step's per-op tables, or under a
// request load (--concurrency, --rate, --requests: planner/serve_load.h) with percentiles;
// --json has the keys ttft_ms, tpot_ms, output_tokens_per_s that scripts rely on either way.
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "graph/kernel_cache.h"
#include "graph/model_config.h"
#include "planner/serve.h"
#include "planner/serve_load.h"

namespace trnsim::cli {

namespace {

struct ServeCmdOptions {
  std::string model, system, chip = "trn2", runtime = std::string(graph::kInGraphRuntime);
  std::vector<std::string> sets;
  int tp = 0, lnc = 1, ep = 1, samples = 3;
  int64_t batch = 1, input = 128, output = 128, bucket = 0, cached_prefix = 0, prefill_chunk = 0;
  int64_t compiled_batch = 0, ctx_batch = 0, max_seq = 0;
  std::string kv_buckets = "pow2", draft_model, weights = "bf16", quantize = "all";
  std::string kv_cache_dtype = "bf16";
  int64_t speculation = 0;
  double acceptance = 0.7;
  bool json = false, no_search = false, eagle = false;
  planner::LoadOptions load;
  bool under_load = false;  // --concurrency, --rate or --requests given
};

void run_serve(const ServeCmdOptions& o, Io& io) {
  if (o.model.empty()) throw InputError("serve", "--model", "name a model (trnsim model --list)");
  planner::ServeOptions so;
  so.system = o.system;
  so.chip = o.chip;
  for (const auto& s : o.sets) so.overrides.push_back(arch::parse_override(s));
  so.tp = o.tp;
  so.lnc = o.lnc;
  so.ep = o.ep;
  so.weights = o.weights;
  so.quantize_mlp_only = o.quantize == "mlp";
  so.kv_cache_dtype = o.kv_cache_dtype;
  so.batch = o.batch;
  so.input_tokens = o.input;
  so.output_tokens = o.output;
  so.bucket = o.bucket;
  so.cached_prefix = o.cached_prefix;
  so.prefill_chunk = o.prefill_chunk;
  so.compiled_batch = o.compiled_batch;
  so.ctx_batch = o.ctx_batch;
  so.max_seq = o.max_seq;
  const auto kv = planner::parse_kv_buckets(o.kv_buckets);
  if (!kv) throw InputError("serve", "--kv-buckets", "pow2, max or exact");
  so.kv_buckets = *kv;
  so.decode_samples = o.samples;
  so.runtime = o.runtime;
  so.search_tilings = !o.no_search;
  const graph::ModelConfig m = graph::load_model_config(o.model);
  std::optional<graph::ModelConfig> draft;
  if (!o.draft_model.empty()) draft = graph::load_model_config(o.draft_model);
  so.draft = draft ? &*draft : nullptr;
  so.speculation_length = o.speculation;
  so.eagle = o.eagle;
  so.acceptance = o.acceptance;
  if (o.under_load) {
    const planner::LoadResult r = planner::serve_load(m, so, o.load);
    print_planner_result(io, o.json, r.to_json(), r.text(), o.sets);
    return;
  }
  const planner::ServeResult r = planner::serve(m, so);
  print_planner_result(io, o.json, r.to_json(), r.text(), o.sets);
}

}  // namespace

void setup_serve_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<ServeCmdOptions>();
  auto* sub = app.add_subcommand(
      "serve", "time to first token and per output token of a batch of requests on a system");
  sub->add_option("--model,-m", o->model, "built-in model (trnsim model --list) or config.json");
  sub->add_option("--system", o->system, "system (spec/systems); default: one chip of --chip");
  sub->add_option("--chip", o->chip, "chip, when no --system")->capture_default_str();
  sub->add_option("--set", o->sets,
                  "override a chip key, or a system key (server., cluster., collective.)");
  sub->add_option("--tp", o->tp,
                  "tensor-parallel ranks (default: every core the model splits over)")
      ->check(CLI::Range(1, 65536));
  sub->add_option("--lnc", o->lnc, "physical cores per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  sub->add_option("--ep", o->ep,
                  "MoE: expert-parallel ranks inside the tp group (each holds experts / ep)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  add_weight_options(sub, o->weights, o->quantize);
  sub->add_option("--kv-cache-dtype", o->kv_cache_dtype,
                  "the KV cache's format (vLLM Neuron's kv_cache_dtype): bf16 (auto), fp8 (the "
                  "chip's E4M3), fp8_e4m3, fp8_e4m3fn, fp8_e5m2")
      ->capture_default_str();
  sub->add_option("--batch,-b", o->batch, "sequences decoded together")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--input-tokens", o->input, "prompt tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--output-tokens", o->output, "generated tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--bucket", o->bucket, "prefill positions (default: power of two >= the prompt)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--cached-prefix", o->cached_prefix,
                  "prefix caching: the first N tokens of every prompt (a shared system prompt) "
                  "are in the KV cache already, so the prefill runs the rest")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  sub->add_option("--prefill-chunk", o->prefill_chunk,
                  "chunked prefill: steps of N token slots, the live sequences' decode tokens "
                  "and a chunk of one prompt (vLLM's max_num_batched_tokens)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  sub->add_option("--compiled-batch", o->compiled_batch,
                  "sequences every decode step runs, live or not (default: --batch)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--ctx-batch", o->ctx_batch,
                  "prompts per prefill (1: continuous batching; default: --batch)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--max-seq", o->max_seq,
                  "compiled sequence length: KV cache positions (default: power of two >= "
                  "input + output tokens)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--kv-buckets", o->kv_buckets,
                  "KV positions a decode step reads: pow2 (NxD Inference's buckets), max "
                  "(--max-seq always) or exact (what-if)")
      ->capture_default_str();
  sub->add_option("--decode-samples", o->samples,
                  "KV lengths at which decode steps are timed (--kv-buckets exact)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--draft-model", o->draft_model,
                  "speculative decoding: the draft model (built-in name or config.json)");
  sub->add_flag("--eagle", o->eagle,
                "speculative decoding with the target's EAGLE head as the draft (one decoder "
                "layer over the target's hidden state; with --speculation-length)");
  sub->add_option("--speculation-length", o->speculation,
                  "speculative decoding: tokens the draft proposes per iteration")
      ->check(CLI::Range(int64_t{0}, int64_t{64}));
  sub->add_option("--acceptance", o->acceptance,
                  "speculative decoding: probability that the target accepts a drafted token")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  auto* conc = sub->add_option("--concurrency", o->load.concurrency,
                               "under load: requests in flight (closed loop)")
                   ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  auto* rate = sub->add_option("--rate", o->load.rate,
                               "under load: Poisson arrivals, requests per second (open loop)")
                   ->check(CLI::Range(0.0, 1e9));
  auto* reqs = sub->add_option("--requests", o->load.requests,
                               "under load: requests served (default: 4 x --concurrency, or 64)")
                   ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--input-spread", o->load.input_spread,
                  "under load: prompt lengths uniform in input-tokens +- this")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  sub->add_option("--output-spread", o->load.output_spread,
                  "under load: output lengths uniform in output-tokens +- this")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  sub->add_option("--seed", o->load.seed, "under load: the lengths' and arrivals' seed")
      ->capture_default_str();
  sub->add_option("--runtime", o->runtime, "collective runtime of the all-reduces (spec/runtime)")
      ->capture_default_str();
  sub->add_flag("--no-search", o->no_search, "take each linear's first legal tiling");
  sub->add_flag("--json", o->json, "the figures as JSON, with a manifest");
  sub->callback([o, conc, rate, reqs, &io] {
    o->under_load = conc->count() > 0 || rate->count() > 0 || reqs->count() > 0;
    run_serve(*o, io);
  });
}

}  // namespace trnsim::cli
