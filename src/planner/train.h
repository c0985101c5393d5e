// A training step under a parallel plan (issue 20's `trnsim train`, first slice): tensor
// parallelism inside a server, pipeline stages, data-parallel replicas with ZeRO 0-3, gradient
// accumulation over micro-batches and full activation recomputation, on a system of servers.
//
// Where each number comes from:
//   - a stage's forward, backward and optimizer time per micro-batch: the model compiler's
//     training step (graph/backward.h) over the stage's layers at the plan's TP on the system,
//     every kernel simulated and the TP all-reduces on the server's fabric; the embedding goes
//     to the first stage, the final norm, LM head and loss to the last;
//   - the pipeline: 1F1B (or GPipe: the same bubble) over m micro-batches, its time
//     sum over stages of (f + b) + (m - 1) x the slowest stage's (f + b), with the activations
//     sent between adjacent stages forward and back exposed once per boundary (the rest overlap
//     the other micro-batches' compute); interleaved with v chunks per stage, the bubble is
//     1 / v of that and pp v - 1 boundaries are crossed;
//   - the data-parallel collectives, all replicas' groups at once on the fabric
//     (fabric/concurrent.h: they share the servers' EFA): ZeRO-0 an all-reduce of the fp32
//     gradients, ZeRO-1 a reduce-scatter of them and an all-gather of the bf16 weights, both
//     exposed after the last micro-batch (gradients accumulate over all of them first);
//     ZeRO-2 reduce-scatters every micro-batch's gradients during its backward and gathers
//     the weights once; ZeRO-3 also gathers the weights before every forward and backward.
//     Per micro-batch, what the slowest stage's forward / backward cannot hide is exposed
//     (an assumption: the collectives are prefetched and bucketed, as DeepSpeed and FSDP do);
//   - memory: ZeRO-1 shards the optimizer state over the replicas, 2 the gradients too, 3 the
//     weights too (plus two layers' whole weights: the one running and the next, prefetched);
//   - the optimizer: each rank's AdamW over its weights, over 1 / dp of them with ZeRO >= 1.
// With sequence parallelism the TP all-reduces are reduce-scatters and all-gathers and the norms
// run on a rank's token shard (graph/build.h); eager attention keeps the [S, S] probabilities.
// Rank order: TP fastest, then DP, then PP (Megatron's tp-dp-pp), so a TP group is a server's
// consecutive cores and a DP group one rank of every TP group of its stage.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "graph/model_config.h"
#include "graph/model_run.h"
#include "planner/energy.h"

namespace trnsim::planner {

// Activation recomputation: none; selective (Megatron's and NxD's: each layer's core attention
// runs its forward again in the backward instead of keeping what it saved); full (each
// layer's forward again, only its input kept).
enum class Recompute { kNone, kSelective, kFull };
std::string_view name(Recompute r);
// "none", "selective" or "full"; InputError naming `key` otherwise.
Recompute parse_recompute(const std::string& s, const std::string& command, const std::string& key);

struct TrainOptions {
  std::string system;                     // spec/systems name or path
  int64_t servers = 0;                    // 0: the system file's
  std::vector<arch::Override> overrides;  // chip keys
  int tp = 1, pp = 1, dp = 1, lnc = 0;    // lnc 0: the system's
  // MoE expert parallelism: the ranks the experts spread over. Up to tp: inside each TP group
  // (graph/build.h BuildOptions::ep), each rank holding experts / ep experts' worth of
  // columns, 1 splitting every expert's columns over the TP ranks. Beyond: tp x e with e
  // dividing dp, the TP groups of e replicas together (Megatron's expert-model parallelism),
  // each rank holding whole experts, the routed rows exchanged by an all-to-all among the e
  // replicas' ranks of one TP index before and after the experts (forward and backward), the
  // experts' gradients reduced over dp / e replicas.
  int ep = 1;
  int zero = 1;  // ZeRO stage 0-3: what the replicas shard (train.cc: stage_memory, DP comm)
  int64_t seq = 2048, global_batch = 1024, micro_batch = 1;
  Recompute recompute = Recompute::kNone;
  // Attention as three ops with the [S, S] scores and probabilities in HBM (Megatron-LM's
  // CoreAttention without flash attention; graph/build.h eager_attention): the probabilities
  // are saved for the backward (dropped by selective recomputation).
  bool eager_attention = false;
  // Sequence parallelism (Megatron's; NxD's sequence_parallel_enabled): the norms, residual
  // adds and their saved activations on a rank's T / tp tokens, each TP all-reduce a
  // reduce-scatter and an all-gather (graph/build.h).
  bool sequence_parallel = false;
  // Interleaved 1F1B: each stage's layers in this many chunks (model chunks of Megatron's
  // interleaved schedule); 1: plain 1F1B.
  int virtual_stages = 1;
  std::string runtime = std::string(graph::kInGraphRuntime);
  bool search_tilings = true;
  // Kernel timings shared with other calls (a plan search's); null: this call's own.
  graph::KernelCachePool* kernel_caches = nullptr;
};

struct TrainResult {
  std::string model, system;
  int tp = 1, pp = 1, dp = 1, lnc = 1, zero = 1, ep = 1;
  int expert_dp = 1;  // replicas the experts spread over (ep / tp when ep > tp, else 1)
  int64_t servers = 1, chips = 1, seq = 0, global_batch = 0, micro_batch = 1, micro_batches = 1;
  int virtual_stages = 1;
  Recompute recompute = Recompute::kNone;
  bool eager_attention = false, sequence_parallel = false;
  double step_time_s = 0, sequences_per_s = 0, tokens_per_s = 0;
  double mfu = 0, hfu = 0;  // model FLOPs (and with recomputation) / (step x the chips' peak)
  // Breakdown of the step (s): the pipeline's compute (TP all-reduces inside, also shown on
  // their own), its bubble, the exposed stage-to-stage sends, the DP reduction, the optimizer.
  // ep_comm_s: the MoE all-to-alls among replicas (expert_dp > 1), inside compute_s too.
  double compute_s = 0, tp_comm_s = 0, ep_comm_s = 0, pp_bubble_s = 0, pp_comm_s = 0, dp_comm_s = 0,
         optimizer_s = 0;
  struct Stage {
    double forward_s = 0, backward_s = 0, optimizer_s = 0;  // per micro-batch (optimizer: step)
    int64_t params = 0;         // the stage's weights (elements, whole: what DP collectives move)
    int64_t expert_params = 0;  // of which MoE experts' (reduced over dp / expert_dp replicas)
    int64_t weight_bytes = 0, grad_bytes = 0, optimizer_bytes = 0, activation_bytes = 0;
  };
  std::vector<Stage> stages;
  int64_t memory_per_chip_bytes = 0, hbm_per_chip_bytes = 0;
  bool fits() const { return memory_per_chip_bytes <= hbm_per_chip_bytes; }
  std::string dp_algorithm;
  // One step's energy on all the chips (energy.h); absent when the chip has no power model.
  std::optional<Energy> energy;
  std::optional<PowerModel> power;
  nlohmann::json to_json() const;
  std::string text() const;
};

// Throws InputError for a plan that does not match the system (tp x pp x dp ranks), layers
// not divisible by pp, a global batch not divisible by dp x micro-batch, and what the model
// runs throw. A plan that does not fit is reported (fits(), memory_per_chip_bytes).
TrainResult train(const graph::ModelConfig& m, const TrainOptions& o);

// The plan's checks and its memory alone (no kernel is simulated): every field train() gives
// but the times, rates and breakdown (0). What a plan search prunes by before timing a plan.
TrainResult train_memory(const graph::ModelConfig& m, const TrainOptions& o);

}  // namespace trnsim::planner
