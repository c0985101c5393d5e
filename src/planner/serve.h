// Serving one batch of requests (issue 20's `trnsim serve`, first slice): the model's
// prefill over the prompt (its context-encoding bucket) gives the time to first token, and
// decode steps (one token per sequence, attention over the KV cache) give the time per output
// token, both from the model compiler's per-kernel simulation (graph/model_run.h) on a system
// of chips with tensor-parallel ranks.
//
// Buckets, as NxD Inference compiles them: the prefill runs at the smallest power of two
// >= the prompt (at least 128, at most the compiled sequence); decode steps are timed at a
// few KV lengths across the output and averaged over every step (their cost is linear in the
// KV length, so the trapezoid over the samples is the mean).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "graph/model_config.h"
#include "graph/model_run.h"

namespace trnsim::planner {

struct ServeOptions {
  std::string system;  // spec/systems name or path; empty: one chip of `chip`
  std::string chip = "trn2";
  std::vector<arch::Override> overrides;
  int tp = 0, lnc = 1;
  int64_t batch = 1, input_tokens = 128, output_tokens = 128;
  int64_t bucket = 0;  // prefill positions; 0: the power of two as above
  int decode_samples = 3;
  std::string runtime = std::string(graph::kInGraphRuntime);  // of the all-reduces
  bool search_tilings = true;
};

struct ServeResult {
  std::string model, where;  // where: the system or chip
  int tp = 1, lnc = 1;
  int64_t batch = 1, input_tokens = 0, output_tokens = 0, bucket = 0;
  double ttft_ms = 0;                                 // prefill latency
  double tpot_ms = 0;                                 // mean decode step
  double e2e_ms = 0;                                  // ttft + (output - 1) x tpot
  double output_tokens_per_s = 0;                     // batch x output / e2e
  std::vector<std::pair<int64_t, double>> decode_ms;  // (KV length, step ms) sampled
  graph::ModelResult prefill, decode;                 // the prefill and the last decode sample
  nlohmann::json to_json() const;
  std::string text() const;
};

// Throws InputError for bad options (tokens < 1, a bucket shorter than the prompt) and what
// the model runs throw; a model that does not fit is reported (fits in the results).
ServeResult serve(const graph::ModelConfig& m, const ServeOptions& o);

}  // namespace trnsim::planner
