// The compiled graphs a Neuron serving stack runs, and what one step of each costs. NxD
// Inference (and Transformers NeuronX on Trn1) compile static shapes: a context-encoding
// (prefill) graph per prompt bucket and a token-generation (decode) graph per KV bucket, each
// for a fixed batch. A step costs what its graph costs, whatever part of it is padding: the
// decode graph runs `compiled_batch` sequences however many are live, and its attention reads
// the bucket's positions, not the sequences' own (NxD Inference's automatic bucketing: powers
// of two from 128 to the compiled sequence length; without bucketing, and in vLLM Neuron's
// decode graphs, every step reads all of them).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "graph/kernel_cache_pool.h"
#include "graph/model_config.h"
#include "graph/model_run.h"
#include "planner/energy.h"

namespace trnsim::planner {

// How decode steps choose the KV positions their attention reads.
enum class KvBuckets {
  kPow2,   // the smallest power of two >= the KV length, 128 .. max_seq (NxDI enable_bucketing)
  kMax,    // max_seq always (one token-generation graph)
  kExact,  // the KV length itself (dynamic shapes: a what-if, not how Neuron runs)
};
std::optional<KvBuckets> parse_kv_buckets(std::string_view s);  // "pow2", "max", "exact"
std::string_view kv_buckets_name(KvBuckets k);

// The smallest power of two >= n and >= 128, at most `cap` (n <= cap).
int64_t pow2_bucket(int64_t n, int64_t cap);

// What one step of a graph costs: its time, and what energy.h counts of it.
struct StepCost {
  double ms = 0;
  double flops = 0, hbm_bytes = 0;  // all ranks
  double link_bytes = 0;            // the all-reduces' bytes when the ranks span chips
  double attention_ms = 0;          // of ms: the attention kernels'
};

// Step costs of one model compiled for one system (the options' system, chip, TP, LNC, --set),
// each distinct (batch, positions) run once through the model compiler (graph/model_run.h) and
// remembered; the runs share one kernel cache pool, so a kernel met in several is simulated
// once. Not thread-safe.
class StepCosts {
 public:
  StepCosts(const graph::ModelConfig& m, graph::ModelRunOptions base);
  // A prefill of `batch` prompts padded to `bucket` positions, after `past` positions each
  // already in the KV cache (prefix caching: their keys and values are read, not computed).
  const StepCost& prefill(int64_t batch, int64_t bucket, int64_t past = 0);
  double prefill_ms(int64_t batch, int64_t bucket, int64_t past = 0) {
    return prefill(batch, bucket, past).ms;
  }
  // A decode step of `batch` sequences whose attention reads `kv` positions.
  const StepCost& decode(int64_t batch, int64_t kv);
  // Speculative decoding's verification: `tokens` new positions per sequence (the drafted ones
  // and one more) through the cache, the last of them reading `kv` positions.
  const StepCost& verify(int64_t batch, int64_t kv, int64_t tokens);
  double decode_ms(int64_t batch, int64_t kv) { return decode(batch, kv).ms; }
  // A chunked-prefill step (vLLM's chunked prefill on NxD Inference's graph of `chunk` token
  // slots): one prompt's next chunk, after `past` of its positions, and, when `batch` > 0,
  // the decode tokens of `batch` sequences reading `kv` positions. The graph's other kernels
  // run over its `chunk` slots whatever fills them (the prefill run of `chunk` positions
  // without its attention); the attention is the chunk's over its past and the decode tokens'
  // over theirs (each from its own run). Its FLOPs and bytes are the chunk prefill's.
  StepCost chunk_step(int64_t chunk, int64_t past, int64_t batch, int64_t kv);
  // The chips the ranks occupy (tp x lnc cores), and their power model: absent when the chip
  // has none (known after the first step).
  int64_t chips() const { return chips_; }
  const std::optional<PowerModel>& power() const { return power_; }
  // Energy of `steps` runs of a step, and of `ms` of the chips idle (static power only).
  std::optional<Energy> energy(const StepCost& c, int64_t steps = 1) const;
  std::optional<Energy> idle_energy(double ms) const;
  const graph::ModelResult& last_prefill() const { return prefill_; }
  const graph::ModelResult& last_decode() const { return decode_; }
  int tp() const { return base_.tp; }
  int lnc() const { return base_.lnc; }
  std::string where() const;  // the system, or the chip
  int runs() const { return runs_; }

 private:
  const graph::ModelResult& run(graph::ModelRunOptions o);
  StepCost cost_of(const graph::ModelResult& r) const;

  const graph::ModelConfig& m_;
  graph::ModelRunOptions base_;
  graph::KernelCachePool pool_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, StepCost> prefill_cost_;
  std::map<std::pair<int64_t, int64_t>, StepCost> decode_cost_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, StepCost> verify_cost_;
  int64_t chips_ = 1;
  std::optional<PowerModel> power_;
  graph::ModelResult prefill_, decode_, last_;
  int runs_ = 0;
};

}  // namespace trnsim::planner
