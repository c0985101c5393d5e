// Running a model on a simulated chip: the graph of a model family (build.h) or a front end,
// fused (fusion.h), lowered kernel by kernel (lower.h) and timed through the kernel cache
// (kernel_cache.h); with values, each kernel also runs functionally on the host's tensors.
//
// Execution model (docs/models.md): the model is one compiled graph, launched once (the
// core's launch overhead once per forward); its kernels run back to back on every rank, each
// reading its inputs from HBM and writing its outputs there; the tensor-parallel ranks are
// the chip's physical cores (or `tp` of them), each running the same kernels on its shard,
// with the all-reduces of the row-parallel linears on the chip's collective path (fabric).
// A kernel's time is that of the ranks of one HBM stack run together (symmetric stacks).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "graph/fusion.h"
#include "graph/graph.h"
#include "graph/kernel_cache.h"
#include "graph/kernel_cache_pool.h"
#include "graph/model_config.h"

namespace trnsim::graph {

struct ModelRunOptions {
  std::string chip = "trn2";
  // A system (spec/systems) instead of one chip: its chip, and tensor-parallel ranks across
  // its chips (the all-reduces on its links). Empty: one chip of `chip`.
  std::string system;
  int lnc = 1;  // physical cores per rank: the kernels shard over tp x lnc cores
  std::string runtime = std::string(kInGraphRuntime);  // of the all-reduces (kernel_cache.h)
  // Serving (build.h): attention through a KV cache with `past` positions in it.
  bool kv_cache = false;
  int64_t past = 0;
  // The cache's format (vLLM Neuron's kv_cache_dtype; build.h kv_cache_format): "bf16" (the
  // model's dtype) or an FP8 name, with a KV cache only.
  std::string kv_cache_dtype = "bf16";
  std::vector<arch::Override> overrides;  // --set on the chip's keys
  int tp = 0;  // 0: every physical core of the chip (fewer when the model does not split so)
  int ep = 1;  // MoE: expert-parallel ranks inside the tp group (build.h BuildOptions::ep)
  // MoE: and across this many data-parallel replicas (build.h; timing only: the all-to-all
  // between them is the caller's, planner/train.cc)
  int expert_dp = 1;
  int64_t batch = 1, seq = 128;
  int64_t layers = -1;  // -1: all of the model's
  bool fuse = true;     // false: only the fusion the kernels require (fusion.h)
  bool search_tilings = true;
  // Weight-only quantization of the decoder layers' linears (build.h WeightQuant, inference
  // only): "bf16" (none), "int8", "fp8" (the chip's E4M3) or an FP8 format name; with
  // quantize_mlp_only, the MLPs (and MoE experts) alone.
  std::string weights = "bf16";
  bool quantize_mlp_only = false;
  // Attention as three ops with the [S, S] scores in HBM (build.h eager_attention; Megatron-LM's
  // CoreAttention, Hugging Face's "eager") instead of flash attention; not with a KV cache.
  bool eager_attention = false;
  // Sequence parallelism over the tp ranks (build.h BuildOptions::sequence_parallel).
  bool sequence_parallel = false;
  bool values = false;  // run the kernels functionally too (small models)
  uint64_t seed = 0;    // random weights and inputs when values and none given
  // A training step (backward.h): forward, cross-entropy loss against `labels`, backward and
  // one AdamW step, instead of a forward.
  bool train = false;
  OptimizerParams optimizer;
  // Gradient accumulation: the step runs forward and backward over this many micro-batches of
  // batch x seq tokens (each weight gradient kernel's result added to the fp32 gradient, the
  // add's traffic not counted), then one optimizer step.
  int64_t micro_batches = 1;
  // What-if, off by default: cross-kernel weight prefetch. A linear's first weight blocks
  // (what its weight buffers hold) load while the kernels before it that leave HBM idle
  // (collectives, latency-bound attention) run; the time hidden is at most the kernel's cold
  // minus warm time (KernelTiming::warm_time) and at most that idle time. Whether the Neuron
  // compiler schedules such loads across a collective is not public; on VALIDATION.md s8 and
  // s9 it helps some figures and hurts others (docs/models.md), so it is not the default.
  // With overlap_kernels it applies to the kernels not timed beside a kernel before them.
  bool prefetch = false;
  // Adjacent compute kernels timed as one program (graph/segment.h): each kernel costs what it
  // adds after the kernel before it, T(before, it) - T(before), so its weight loads run under
  // that kernel and the boundary's fill and drain overlap, as in one compiled graph. Not across
  // a collective (what a compiler schedules around one is the prefetch what-if's question).
  // false: kernels back to back, each timed alone.
  bool overlap_kernels = true;
  // Caches of kernel timings shared with other runs (a plan search's): each distinct kernel
  // is simulated once for all of them. Null: this run's own. With a pool, the result's
  // kernels_simulated / simulations / cache_hits count the shared cache's whole life.
  KernelCachePool* kernel_caches = nullptr;
};

// One row per distinct operator of the model: the layers' copies of an operator fold into
// one row ("layers.*.mlp.down_proj", count = layers).
struct OpRow {
  std::string name, kind, detail, bound, tiling, fused;
  int64_t count = 0;
  // One instance: the mean over them of what each adds after the kernel before it (kernels
  // timed together, ModelRunOptions::overlap_kernels), else of its time alone.
  double time_us = 0;
  double flops = 0;       // one instance, one rank
  int64_t hbm_bytes = 0;  // one instance, one rank
  double total_us() const { return time_us * static_cast<double>(count); }
};

struct ModelResult {
  std::string model, chip, source;
  int tp = 1;
  int ep = 1;
  int64_t batch = 1, seq = 0, layers = 0;
  int64_t params = 0;
  std::vector<OpRow> rows;
  double latency_us = 0;  // forward, launch included
  double launch_us = 0;
  double prefetch_us = 0;          // kernel time hidden by cross-kernel weight prefetch (one rank)
  double overlap_us = 0;           // kernel time hidden by timing adjacent kernels together
  double flops = 0;                // the model's useful FLOPs (all ranks)
  double mfu = 0;                  // flops / (latency x chip bf16 peak of the ranks used)
  int64_t hbm_bytes = 0;           // all ranks
  int64_t collective_bytes = 0;    // all ranks: what the all-reduces send (ring: 2 (tp - 1) S)
  int64_t weight_bytes = 0;        // per rank
  int64_t activation_bytes = 0;    // per rank: the largest live set of activations (upper bound)
  int64_t cache_bytes = 0;         // per physical core: KV caches
  int64_t optimizer_bytes = 0;     // per physical core: fp32 master weights and AdamW moments
  int64_t hbm_capacity_bytes = 0;  // one physical core's share of the chip's HBM (capacity / cores)
  int lnc = 1;
  std::string system;
  bool train = false;  // a training step (forward, backward, optimizer) rather than a forward
  int64_t micro_batches = 1;
  int64_t needed_bytes() const {
    return weight_bytes + activation_bytes + cache_bytes + optimizer_bytes;
  }
  bool fits() const { return needed_bytes() <= hbm_capacity_bytes; }
  int kernels = 0, kernels_simulated = 0, cache_hits = 0;  // simulated: distinct kernels
  int simulations = 0;                                     // simulator runs, tiling probes included
  FusionReport fusion;
  std::string graph_text;  // the fused graph (Graph::dump)
  // With values: the model's output(s) by value name, fp32 (bf16-exact values), and the
  // weights used (the caller's, or the random ones generated from the seed).
  std::map<std::string, std::vector<float>> outputs;
  std::map<std::string, std::vector<float>> weights;
  // With values, of a training step: each weight's gradient (fp32) and its value after the
  // optimizer step; outputs["loss"] is the per-token loss, `loss` its mean.
  std::map<std::string, std::vector<float>> gradients, updated_weights;
  double loss = 0;
  // Every kernel in execution order (one rank): the forward's timeline.
  struct Slice {
    std::string name, kind;
    double start_us = 0, dur_us = 0;
    // "forward" (the loss included), "backward" (gradient sums and all-reduces included) or
    // "optimizer"; a forward run's are all "forward".
    std::string phase = "forward";
    // The part of dur_us no other kernel ran beside: a collective's time not under compute
    // (stream_schedule.h), a compute kernel's whole time. The run's latency is their sum.
    double exposed_us = 0;
  };
  std::vector<Slice> timeline;
  double overlapped_us = 0;   // collective time under independent compute (latency excludes it)
  std::string table() const;  // the per-op table and the totals, as `trnsim model` prints
  nlohmann::json to_json() const;
  // Chrome / Perfetto trace JSON: one track per kernel kind (compute kernels, collectives).
  nlohmann::json trace_json() const;
};

// Weights by graph name ("layers.0.self_attn.q_proj.weight", [in, out] for linears) and
// inputs by name ("input_ids" [batch * seq]), fp32 values.
using TensorMap = std::map<std::string, std::vector<float>>;

// Throws InputError for bad options, a model that does not fit HBM when values are asked,
// values with tp > 1 (functional runs hold one rank), missing or mis-sized weights, and
// training what has no backward (backward.h).
ModelResult run_model(const ModelConfig& m, const ModelRunOptions& o,
                      const TensorMap* weights = nullptr, const TensorMap* inputs = nullptr);
// The same for a graph from a front end (already per-rank; fused here when o.fuse).
ModelResult run_graph(Graph g, const std::string& name, const ModelRunOptions& o,
                      const TensorMap* weights = nullptr, const TensorMap* inputs = nullptr);

}  // namespace trnsim::graph
