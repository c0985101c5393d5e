// Serving under a request load (`trnsim serve --concurrency C` or `--rate R`): requests arrive,
// wait, are prefilled and decode together, as vLLM's continuous batching runs them on NxD
// Inference's compiled graphs (serve_steps.h). The schedule is simulated step by step:
//   - a free slot (fewer live sequences than the compiled batch) and a waiting request: a
//     prefill of up to ctx_batch waiting requests (first come, first served) at the bucket of
//     the longest prompt, which gives each its first token (prefills go first, as vLLM's
//     scheduler puts them);
//   - else, live sequences: one decode step of the compiled batch, its attention at the KV
//     bucket of the longest live sequence; each live sequence gets a token, and leaves when it
//     has its output;
//   - else the next arrival.
// Arrivals: closed loop (`concurrency` clients, each sending its next request when the last
// finished, all starting at 0) or open loop (Poisson at `rate` requests per second). Prompt and
// output lengths: the options' tokens, +- a uniform spread. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/model_config.h"
#include "planner/energy.h"
#include "planner/serve.h"

namespace trnsim::planner {

struct LoadOptions {
  int64_t requests = 0;     // 0: 4 x concurrency (closed loop) or 64 (open loop)
  int64_t concurrency = 1;  // closed loop: requests in flight
  double rate = 0;          // open loop: requests per second; 0: closed loop
  int64_t input_spread = 0, output_spread = 0;  // tokens, uniform +-
  uint64_t seed = 1;
};

struct RequestRecord {
  int64_t input = 0, output = 0;
  double arrival_ms = 0, first_token_ms = 0, done_ms = 0;
  double ttft_ms() const { return first_token_ms - arrival_ms; }
  double tpot_ms() const;  // (done - first token) / (output - 1); 0 for one output token
  double e2e_ms() const { return done_ms - arrival_ms; }
};

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
Percentiles percentiles(std::vector<double> v);  // nearest rank; empty: zeros

struct LoadResult {
  std::string model, where;
  int tp = 1, lnc = 1;
  ServeOptions options;  // resolved (compiled batch, ctx batch, max_seq)
  LoadOptions load;
  std::vector<RequestRecord> requests;
  Percentiles ttft_ms, tpot_ms, e2e_ms;
  double makespan_ms = 0;
  double output_tokens_per_s = 0;  // all output tokens / makespan
  double mean_live = 0;            // live sequences per decode step
  int64_t prefills = 0, decode_steps = 0;
  int step_runs = 0;  // model compiler runs (distinct graphs timed)
  // Energy over the makespan, idle time at static power (energy.h); absent when the chip has
  // no power model.
  std::optional<Energy> energy;
  std::optional<PowerModel> power;
  double joules_per_output_token = 0, output_tokens_per_s_per_mw = 0;
  nlohmann::json to_json() const;
  std::string text() const;
};

// Throws InputError for bad options (as serve(), and concurrency or requests < 1, a negative
// rate or spread, a spread that leaves a length < 1, a request longer than max_seq).
LoadResult serve_load(const graph::ModelConfig& m, const ServeOptions& o, const LoadOptions& l);

}  // namespace trnsim::planner
