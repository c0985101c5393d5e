// Serving one batch of requests (`trnsim serve`) as a Neuron serving stack runs it: the
// prefill (context encoding) at the prompt's bucket gives the time to first token, decode steps
// (token generation, one token per sequence) through a KV cache give the time per output
// token, each step the cost of its compiled graph (serve_steps.h): batch `compiled_batch`
// however many sequences are live, attention over the KV bucket's positions. Every kernel is
// simulated by the model compiler (graph/model_run.h) on a system of chips with
// tensor-parallel ranks. Under a request load, serve_load.h.
//
// Buckets, as NxD Inference compiles them: the prefill runs at the smallest power of two
// >= the prompt (at least 128, at most the compiled sequence length `max_seq`); decode steps
// at their KV bucket (`kv_buckets`), each distinct bucket timed once and weighted by its
// steps. With kv_buckets exact (a what-if) decode steps are timed at a few KV lengths and
// averaged over every step (linear in the KV length: the trapezoid over the samples).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "graph/model_config.h"
#include "graph/model_run.h"
#include "planner/serve_steps.h"

namespace trnsim::planner {

struct ServeOptions {
  std::string system;  // spec/systems name or path; empty: one chip of `chip`
  std::string chip = "trn2";
  std::vector<arch::Override> overrides;
  int tp = 0, lnc = 1;
  int ep = 1;  // MoE: expert-parallel ranks inside the tp group (graph/build.h)
  // Weight-only quantization (NxD Inference's quantized=True): graph::ModelRunOptions::weights
  // ("bf16", "int8", "fp8", ...) and quantize_mlp_only; the draft model's weights too.
  std::string weights = "bf16";
  bool quantize_mlp_only = false;
  // The KV cache's format (vLLM Neuron's kv_cache_dtype): graph::ModelRunOptions::kv_cache_dtype.
  std::string kv_cache_dtype = "bf16";
  int64_t batch = 1, input_tokens = 128, output_tokens = 128;
  // Prefix caching (NxD Inference's and vLLM's): the first cached_prefix tokens of every
  // prompt (a shared system prompt) already have their keys and values in the cache, so the
  // prefill runs the rest of the prompt, its attention reading the prefix from the cache.
  int64_t cached_prefix = 0;
  int64_t bucket = 0;  // prefill positions (of the uncached rest); 0: the power of two as above
  // Chunked prefill (vLLM's, on NxD Inference's chunked-prefill graph): 0, off; else each step
  // is a graph of this many token slots, the live sequences' decode tokens first and the rest a
  // chunk of one prompt (StepCosts::chunk_step), so long prompts do not stall the decodes.
  // Prompts are then prefilled one at a time.
  int64_t prefill_chunk = 0;
  // The compiled graphs (NxDI's batch_size / tkg_batch_size, ctx_batch_size, seq_len).
  int64_t compiled_batch = 0;  // sequences every decode step runs; 0: batch
  int64_t ctx_batch = 0;       // prompts per prefill (1: continuous batching); 0: batch
  int64_t max_seq = 0;         // KV cache positions; 0: power of two >= input + output tokens
  KvBuckets kv_buckets = KvBuckets::kPow2;
  // Speculative decoding (NxDI's vanilla speculation): `draft` drafts speculation_length
  // tokens per iteration, each accepted with probability `acceptance`; the target verifies
  // them in one step. Not under a load (serve_load refuses it).
  const graph::ModelConfig* draft = nullptr;
  // EAGLE speculation (NxD Inference's): the draft is the target's EAGLE head
  // (graph::eagle_draft_of: one decoder layer over the target's hidden state), not a model.
  bool eagle = false;
  int64_t speculation_length = 0;
  double acceptance = 0.7;
  int decode_samples = 3;                                     // kv_buckets exact: KV lengths timed
  std::string runtime = std::string(graph::kInGraphRuntime);  // of the all-reduces
  bool search_tilings = true;
};

struct ServeResult {
  std::string model, where;  // where: the system or chip
  int tp = 1, lnc = 1, ep = 1;
  std::string weights = "bf16";  // ServeOptions::weights, " (MLP)" when only the MLPs
  std::string kv_cache_dtype = "bf16";  // ServeOptions::kv_cache_dtype
  int64_t batch = 1, input_tokens = 0, output_tokens = 0, bucket = 0, cached_prefix = 0;
  int64_t prefill_chunk = 0;
  int64_t compiled_batch = 1, ctx_batch = 1, max_seq = 0;
  KvBuckets kv_buckets = KvBuckets::kPow2;
  std::string draft_model;
  int64_t speculation_length = 0;
  double acceptance = 0, tokens_per_iteration = 1;
  double ttft_ms = 0;              // mean over the batch's requests
  double tpot_ms = 0;              // mean decode step
  double e2e_ms = 0;               // ttft + (output - 1) x tpot
  double output_tokens_per_s = 0;  // batch x output / e2e
  // (KV positions read, ms per output token: a decode step's, or with speculation an
  // iteration's over the tokens it yields)
  std::vector<std::pair<int64_t, double>> decode_ms;
  std::vector<int64_t> decode_steps;   // steps at each of them (not exact)
  graph::ModelResult prefill, decode;  // the prefill and the last decode sample
  // Energy of the batch's prefills and decode steps (energy.h); absent when the chip has no
  // power model. Per output token, and output tokens/s per MW of the chips' mean power.
  std::optional<Energy> energy;
  std::optional<PowerModel> power;
  double joules_per_output_token = 0, output_tokens_per_s_per_mw = 0;
  nlohmann::json to_json() const;
  std::string text() const;
};

// Throws InputError for bad options (tokens < 1, a bucket shorter than the prompt, a request
// longer than max_seq, a compiled batch below the batch) and what the model runs throw; a
// model that does not fit is reported (fits in the results).
ServeResult serve(const graph::ModelConfig& m, const ServeOptions& o);

// The options with their defaults resolved (compiled_batch, ctx_batch, max_seq; bucket for
// `input` tokens), checked as serve() checks them.
ServeOptions resolve(const ServeOptions& o);

// The model-run options every step of `o` shares (system, chip, TP, LNC, --set, runtime).
graph::ModelRunOptions step_options(const ServeOptions& o);

}  // namespace trnsim::planner
