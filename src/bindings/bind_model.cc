// Model bindings (graph/model_run.h): built-in configs, and a model's forward compiled and
// timed on a simulated chip. The result crosses as the JSON `trnsim model --json` prints, plus
// the fused graph's text, the timeline and (with values) the output and weight tensors as
// float32 arrays.
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "base/interrupt.h"
#include "bindings/bindings.h"
#include "graph/graph_json.h"
#include "graph/model_config.h"
#include "graph/model_run.h"
#include "planner/plan_search.h"
#include "planner/serve.h"
#include "planner/serve_load.h"
#include "planner/train.h"

namespace trnsim::bindings {

namespace {

using InArray = nb::ndarray<nb::ro, float, nb::c_contig, nb::device::cpu>;
using OutArray = nb::ndarray<nb::numpy, float>;

OutArray to_numpy(const std::vector<float>& v) {
  auto buf = std::make_unique<float[]>(v.size() + 1);
  std::memcpy(buf.get(), v.data(), v.size() * sizeof(float));
  float* raw = buf.release();
  nb::capsule owner(raw, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  const size_t shape[1] = {v.size()};
  return OutArray(raw, 1, shape, owner);
}

graph::TensorMap from_numpy(const std::map<std::string, InArray>& in) {
  graph::TensorMap out;
  for (const auto& [name, a] : in) out[name].assign(a.data(), a.data() + a.size());
  return out;
}

nlohmann::json config_json(const graph::ModelConfig& m) {
  return {{"name", m.name},
          {"model_type", m.model_type},
          {"source", m.source},
          {"hidden", m.hidden},
          {"layers", m.layers},
          {"heads", m.heads},
          {"kv_heads", m.kv_heads},
          {"head_dim", m.head_dim},
          {"intermediate", m.intermediate},
          {"vocab", m.vocab},
          {"max_positions", m.max_positions},
          {"norm", ops::name(m.norm)},
          {"eps", m.eps},
          {"mlp_act", ops::name(m.mlp_act)},
          {"post_norm", m.post_norm},
          {"causal", m.causal},
          {"rope", m.rope},
          {"rope_theta", m.rope_theta},
          {"learned_positions", m.learned_positions},
          {"qk_norm", m.qk_norm},
          {"attn_bias", m.attn_bias},
          {"mlp_bias", m.mlp_bias},
          {"tie_embeddings", m.tie_embeddings},
          {"experts", m.experts},
          {"experts_per_token", m.experts_per_token},
          {"expert_intermediate", m.expert_intermediate},
          {"norm_top_k", m.norm_top_k},
          {"dtype", m.dtype.name()},
          {"params", m.params()}};
}

nb::dict result_dict(const graph::ModelResult& r) {
  nb::dict d;
  d["json"] = r.to_json().dump();
  d["table"] = r.table();
  d["graph"] = r.graph_text;
  d["trace"] = r.trace_json().dump();
  nb::dict outs, ws, grads, updated;
  for (const auto& [k, v] : r.outputs) outs[k.c_str()] = to_numpy(v);
  for (const auto& [k, v] : r.weights) ws[k.c_str()] = to_numpy(v);
  for (const auto& [k, v] : r.gradients) grads[k.c_str()] = to_numpy(v);
  for (const auto& [k, v] : r.updated_weights) updated[k.c_str()] = to_numpy(v);
  d["outputs"] = outs;
  d["weights"] = ws;
  d["gradients"] = grads;
  d["updated_weights"] = updated;
  return d;
}

// Runs `f` with the GIL released and Ctrl-C turned into an interrupt of the simulation.
template <class F>
auto run_released(F&& f) {
  const SigintScope sigint(on_main_thread());
  nb::gil_scoped_release release;
  return f();
}

// The options both model runs take from Python.
graph::ModelRunOptions run_options(const std::string& chip, const std::vector<std::string>& sets,
                                   bool fuse, bool search, bool values, uint64_t seed) {
  graph::ModelRunOptions o;
  o.chip = chip;
  for (const auto& s : sets) o.overrides.push_back(arch::parse_override(s));
  o.fuse = fuse;
  o.search_tilings = search;
  o.values = values;
  o.seed = seed;
  return o;
}

}  // namespace

void bind_model(nb::module_& m) {
  m.def("model_list", &graph::list_models, "Names of the built-in models (spec/models).");
  m.def(
      "model_config",
      [](const std::string& name_or_path) {
        return config_json(graph::load_model_config(name_or_path)).dump();
      },
      nb::arg("model"), "A model's architecture as read from its config.json, as JSON.");
  m.def(
      "model_run",
      [](const std::string& model, const std::string& chip, int tp, int64_t batch, int64_t seq,
         int64_t layers, bool fuse, bool search, bool values, uint64_t seed,
         const std::vector<std::string>& sets,
         std::optional<std::map<std::string, InArray>> weights,
         std::optional<std::map<std::string, InArray>> inputs, bool train, double lr,
         double weight_decay, bool stochastic_rounding, int64_t micro_batches, int ep,
         const std::string& quant_weights, const std::string& quantize, bool eager_attention,
         bool sequence_parallel) {
        graph::ModelRunOptions o = run_options(chip, sets, fuse, search, values, seed);
        o.ep = ep;
        o.eager_attention = eager_attention;
        o.sequence_parallel = sequence_parallel;
        o.weights = quant_weights;
        o.quantize_mlp_only = quantize == "mlp";
        o.train = train;
        o.optimizer.lr = lr;
        o.optimizer.weight_decay = weight_decay;
        o.optimizer.stochastic_rounding = stochastic_rounding;
        o.micro_batches = micro_batches;
        o.tp = tp;
        o.batch = batch;
        o.seq = seq;
        o.layers = layers;
        const graph::ModelConfig cfg = graph::load_model_config(model);
        const graph::TensorMap w = weights ? from_numpy(*weights) : graph::TensorMap{};
        const graph::TensorMap in = inputs ? from_numpy(*inputs) : graph::TensorMap{};
        return result_dict(run_released([&] {
          return graph::run_model(cfg, o, weights ? &w : nullptr, inputs ? &in : nullptr);
        }));
      },
      nb::arg("model"), nb::arg("chip") = "trn2", nb::arg("tp") = 0, nb::arg("batch") = 1,
      nb::arg("seq") = 128, nb::arg("layers") = -1, nb::arg("fuse") = true,
      nb::arg("search") = true, nb::arg("values") = false, nb::arg("seed") = 0,
      nb::arg("sets") = std::vector<std::string>{}, nb::arg("weights") = nb::none(),
      nb::arg("inputs") = nb::none(), nb::arg("train") = false, nb::arg("lr") = 1e-4,
      nb::arg("weight_decay") = 0.0, nb::arg("stochastic_rounding") = true,
      nb::arg("micro_batches") = 1, nb::arg("ep") = 1, nb::arg("quant_weights") = "bf16",
      nb::arg("quantize") = "all", nb::arg("eager_attention") = false,
      nb::arg("sequence_parallel") = false,
      "A model's forward (or training step) on a simulated chip: dict of json, table, graph, "
      "trace, outputs, weights, gradients, updated_weights.");
  m.def(
      "model_run_graph",
      [](const std::string& graph_json, const std::string& name, const std::string& chip, bool fuse,
         bool search, bool values, uint64_t seed, const std::vector<std::string>& sets,
         std::optional<std::map<std::string, InArray>> weights,
         std::optional<std::map<std::string, InArray>> inputs) {
        const graph::ModelRunOptions o = run_options(chip, sets, fuse, search, values, seed);
        graph::Graph g = graph::graph_from_json(graph_json);
        const graph::TensorMap w = weights ? from_numpy(*weights) : graph::TensorMap{};
        const graph::TensorMap in = inputs ? from_numpy(*inputs) : graph::TensorMap{};
        return result_dict(run_released([&] {
          return graph::run_graph(std::move(g), name, o, weights ? &w : nullptr,
                                  inputs ? &in : nullptr);
        }));
      },
      nb::arg("graph"), nb::arg("name"), nb::arg("chip") = "trn2", nb::arg("fuse") = true,
      nb::arg("search") = true, nb::arg("values") = false, nb::arg("seed") = 0,
      nb::arg("sets") = std::vector<std::string>{}, nb::arg("weights") = nb::none(),
      nb::arg("inputs") = nb::none(),
      "A front end's graph (graph_json.h) on a simulated chip: the same dict as model_run.");
  m.def(
      "model_serve",
      [](const std::string& model, const std::string& system, const std::string& chip, int tp,
         int lnc, int64_t batch, int64_t input_tokens, int64_t output_tokens, int64_t bucket,
         const std::string& runtime, const std::vector<std::string>& sets, int64_t compiled_batch,
         int64_t ctx_batch, int64_t max_seq, const std::string& kv_buckets, int64_t concurrency,
         int64_t requests, double rate, int64_t input_spread, int64_t output_spread, uint64_t seed,
         const std::string& draft_model, int64_t speculation_length, double acceptance, int ep,
         int64_t cached_prefix, bool eagle, int64_t prefill_chunk, const std::string& quant_weights,
         const std::string& quantize, const std::string& kv_cache_dtype) {
        planner::ServeOptions o;
        o.weights = quant_weights;
        o.quantize_mlp_only = quantize == "mlp";
        o.kv_cache_dtype = kv_cache_dtype;
        o.prefill_chunk = prefill_chunk;
        o.eagle = eagle;
        o.ep = ep;
        o.cached_prefix = cached_prefix;
        o.system = system;
        o.chip = chip;
        for (const auto& s : sets) o.overrides.push_back(arch::parse_override(s));
        o.tp = tp;
        o.lnc = lnc;
        o.batch = batch;
        o.input_tokens = input_tokens;
        o.output_tokens = output_tokens;
        o.bucket = bucket;
        o.runtime = runtime;
        o.compiled_batch = compiled_batch;
        o.ctx_batch = ctx_batch;
        o.max_seq = max_seq;
        const auto kv = planner::parse_kv_buckets(kv_buckets);
        if (!kv) throw InputError("serve", "kv_buckets", "pow2, max or exact");
        o.kv_buckets = *kv;
        const graph::ModelConfig cfg = graph::load_model_config(model);
        std::optional<graph::ModelConfig> draft;
        if (!draft_model.empty()) draft = graph::load_model_config(draft_model);
        o.draft = draft ? &*draft : nullptr;
        o.speculation_length = speculation_length;
        o.acceptance = acceptance;
        if (concurrency > 0 || requests > 0 || rate > 0) {
          planner::LoadOptions l;
          l.concurrency = concurrency > 0 ? concurrency : 1;
          l.requests = requests;
          l.rate = rate;
          l.input_spread = input_spread;
          l.output_spread = output_spread;
          l.seed = seed;
          const planner::LoadResult r =
              run_released([&] { return planner::serve_load(cfg, o, l); });
          return std::make_pair(r.to_json().dump(), r.text());
        }
        const planner::ServeResult r = run_released([&] { return planner::serve(cfg, o); });
        return std::make_pair(r.to_json().dump(), r.text());
      },
      nb::arg("model"), nb::arg("system") = "", nb::arg("chip") = "trn2", nb::arg("tp") = 0,
      nb::arg("lnc") = 1, nb::arg("batch") = 1, nb::arg("input_tokens") = 128,
      nb::arg("output_tokens") = 128, nb::arg("bucket") = 0,
      nb::arg("runtime") = std::string(graph::kInGraphRuntime),
      nb::arg("sets") = std::vector<std::string>{}, nb::arg("compiled_batch") = 0,
      nb::arg("ctx_batch") = 0, nb::arg("max_seq") = 0, nb::arg("kv_buckets") = "pow2",
      nb::arg("concurrency") = 0, nb::arg("requests") = 0, nb::arg("rate") = 0.0,
      nb::arg("input_spread") = 0, nb::arg("output_spread") = 0, nb::arg("seed") = 1,
      nb::arg("draft_model") = "", nb::arg("speculation_length") = 0, nb::arg("acceptance") = 0.7,
      nb::arg("ep") = 1, nb::arg("cached_prefix") = 0, nb::arg("eagle") = false,
      nb::arg("prefill_chunk") = 0, nb::arg("quant_weights") = "bf16", nb::arg("quantize") = "all",
      nb::arg("kv_cache_dtype") = "bf16",
      "Requests served (planner/serve.h; under a load, planner/serve_load.h): (JSON as trnsim "
      "serve --json, text).");
  m.def(
      "model_train",
      [](const std::string& model, const std::string& system, int64_t servers, int tp, int pp,
         int dp, int lnc, int zero, int64_t seq, int64_t global_batch, int64_t micro_batch,
         const std::string& recompute, const std::string& runtime,
         const std::vector<std::string>& sets, int virtual_stages, int ep, bool eager_attention,
         bool sequence_parallel) {
        planner::TrainOptions o;
        o.eager_attention = eager_attention;
        o.sequence_parallel = sequence_parallel;
        o.virtual_stages = virtual_stages;
        o.ep = ep;
        o.system = system;
        o.servers = servers;
        for (const auto& s : sets) o.overrides.push_back(arch::parse_override(s));
        o.tp = tp;
        o.pp = pp;
        o.dp = dp;
        o.lnc = lnc;
        o.zero = zero;
        o.seq = seq;
        o.global_batch = global_batch;
        o.micro_batch = micro_batch;
        o.recompute = planner::parse_recompute(recompute, "train", "recompute");
        o.runtime = runtime;
        const graph::ModelConfig cfg = graph::load_model_config(model);
        const planner::TrainResult r = run_released([&] { return planner::train(cfg, o); });
        return std::make_pair(r.to_json().dump(), r.text());
      },
      nb::arg("model"), nb::arg("system"), nb::arg("servers") = 0, nb::arg("tp") = 1,
      nb::arg("pp") = 1, nb::arg("dp") = 1, nb::arg("lnc") = 0, nb::arg("zero") = 1,
      nb::arg("seq") = 2048, nb::arg("global_batch") = 1024, nb::arg("micro_batch") = 1,
      nb::arg("recompute") = "none", nb::arg("runtime") = std::string(graph::kInGraphRuntime),
      nb::arg("sets") = std::vector<std::string>{}, nb::arg("virtual_stages") = 1,
      nb::arg("ep") = 1, nb::arg("eager_attention") = false, nb::arg("sequence_parallel") = false,
      "One training step under a plan (planner/train.h): (JSON as trnsim train --json, text).");
  m.def(
      "model_plan",
      [](const std::string& model, const std::string& system, int64_t servers, int64_t seq,
         int64_t global_batch, const std::vector<int>& tp, const std::vector<int>& pp,
         const std::vector<int>& lnc, const std::vector<int64_t>& micro_batch,
         const std::vector<int>& zero, const std::vector<std::string>& recompute, size_t top,
         int jobs, const std::string& runtime, const std::vector<std::string>& sets,
         const std::vector<int>& virtual_stages, const std::vector<int>& ep, bool eager_attention,
         bool sequence_parallel) {
        planner::PlanSearchOptions o;
        o.base.eager_attention = eager_attention;
        o.base.sequence_parallel = sequence_parallel;
        o.virtual_stages = virtual_stages;
        o.ep = ep;
        o.base.system = system;
        o.base.servers = servers;
        for (const auto& s : sets) o.base.overrides.push_back(arch::parse_override(s));
        o.base.seq = seq;
        o.base.global_batch = global_batch;
        o.base.runtime = runtime;
        o.tp = tp;
        o.pp = pp;
        o.lnc = lnc;
        o.micro_batch = micro_batch;
        o.zero = zero;
        o.recompute.clear();
        for (const std::string& r : recompute)
          o.recompute.push_back(planner::parse_recompute(r, "plan", "recompute"));
        o.top = top;
        o.jobs = jobs;
        const graph::ModelConfig cfg = graph::load_model_config(model);
        const planner::PlanSearchResult r =
            run_released([&] { return planner::search_plans(cfg, o); });
        return std::make_pair(r.to_json().dump(), r.text());
      },
      nb::arg("model"), nb::arg("system"), nb::arg("servers"), nb::arg("seq"),
      nb::arg("global_batch"), nb::arg("tp"), nb::arg("pp"), nb::arg("lnc"), nb::arg("micro_batch"),
      nb::arg("zero"), nb::arg("recompute"), nb::arg("top"), nb::arg("jobs"),
      nb::arg("runtime") = std::string(graph::kInGraphRuntime),
      nb::arg("sets") = std::vector<std::string>{}, nb::arg("virtual_stages") = std::vector<int>{1},
      nb::arg("ep") = std::vector<int>{}, nb::arg("eager_attention") = false,
      nb::arg("sequence_parallel") = false,
      "The plan search (planner/plan_search.h): (JSON as trnsim plan --json, text).");
}

}  // namespace trnsim::bindings
