// Plan search (issue 20's `trnsim plan`): every legal TP x PP x DP plan of a model on a
// system, with each micro-batch size, ZeRO stage and recomputation asked for, pruned by memory
// before any kernel is simulated (planner::train_memory), the rest timed (planner::train) and
// ranked by step time, each with what bounds it.
//
// Legal: TP a power of two up to a server's ranks (a NeuronLink domain) whose TP x LNC cores
// divide the model's attention heads; PP a divisor of the layers; TP x PP x DP the system's ranks;
// the global batch whole micro-batches on every replica. Plans the model or system still refuses
// (train() throws InputError) are counted as illegal with the reason. The timed plans share
// kernel timings (graph/kernel_cache_pool.h): a TP degree's kernels are simulated once for the
// whole search, so a search costs about one stage run per (TP, micro-batch) and the rest is
// graph building and collectives.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "graph/model_config.h"
#include "planner/train.h"

namespace trnsim::planner {

struct PlanSearchOptions {
  TrainOptions base;        // system, servers, overrides, seq, global batch, runtime, tiling search
  std::vector<int> tp, pp;  // empty: every legal degree
  std::vector<int> lnc;     // physical cores per rank; empty: base.lnc or the system's
  std::vector<int64_t> micro_batch{1, 2, 4};  // sequences per micro-batch
  std::vector<int> zero{0, 1};                // what Neuron Distributed runs; 2 and 3 on request
  std::vector<int> virtual_stages{1};         // interleaved chunks per stage (with PP > 1 only)
  // MoE expert parallelism (TrainOptions::ep) to try; empty: 1 for a dense model; for a MoE 1,
  // TP (inside each TP group) and TP x every power of two up to DP (across replicas).
  std::vector<int> ep;
  std::vector<Recompute> recompute{Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  size_t top = 10;  // plans listed (all are counted)
  int jobs = 1;     // threads: the plans of one (LNC, TP, micro-batch) are one task
};

// What a plan's step time is mostly made of.
enum class PlanBound {
  kCompute,
  kTpComm,
  kEpComm,
  kPipelineBubble,
  kStageSends,
  kDpComm,
  kOptimizer
};
const char* plan_bound_name(PlanBound b);
// The largest part of the step: compute without its TP all-reduces and EP all-to-alls, the TP
// all-reduces, the EP all-to-alls, the pipeline bubble, the stage sends, the DP gradients, the
// optimizer.
PlanBound plan_bound(const TrainResult& r);

struct PlanOutcome {
  TrainOptions plan;
  TrainResult result;  // timed, or memory only (step_time_s 0) when pruned
  bool timed = false;
  PlanBound bound = PlanBound::kCompute;
};

struct PlanSearchResult {
  std::string model, system;
  int64_t servers = 0, chips = 0, ranks = 0;  // ranks: at the smallest LNC searched
  size_t enumerated = 0;                      // plans built from the options
  size_t illegal = 0;                         // refused by train() (see illegal_reasons)
  size_t pruned_memory = 0;                   // do not fit HBM: not timed
  size_t timed = 0;
  std::vector<std::string> illegal_reasons;  // distinct messages, first seen first
  std::vector<PlanOutcome> best;             // timed plans, fastest first, at most `top`
  std::optional<PlanOutcome> least_memory;   // when none fits: the plan closest to fitting
  int kernels_simulated = 0;                 // distinct kernels over the whole search
  nlohmann::json to_json() const;
  std::string text() const;
};

// Throws InputError for options no plan can satisfy (an unknown system, a degree < 1).
PlanSearchResult search_plans(const graph::ModelConfig& m, const PlanSearchOptions& o);

}  // namespace trnsim::planner
