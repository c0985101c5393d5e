// Graphs of the built-in model families (model_config.h), as their Hugging Face modules
// compute them, one tensor-parallel rank's share (Megatron-style: q, k, v, gate and up
// column-parallel, o and down row-parallel with an all-reduce after each, the lm head
// vocab-parallel; embeddings and norms replicated). Unfused: the front-end operators a
// torch.export of the same module gives; fusion.h turns them into kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "arch/chip_spec.h"
#include "graph/graph.h"
#include "graph/model_config.h"

namespace trnsim::graph {

// Weight-only quantization as NxD Inference does it (quantized=True, quantization_dtype,
// per_channel_symmetric): the decoder layers' linear weights held in a 1-byte format with an
// fp32 scale per output channel (ops.h LinearSpec::weight_dtype, weight_scale); the
// embeddings, norms, router and lm head stay in the model's dtype (NxD's
// modules_to_not_convert default and the Llama-3.3-70B FP8 tutorial's lm_head).
struct WeightQuant {
  std::optional<num::Format> dtype;  // unset: no quantization
  bool mlp_only = false;  // only the MLP (and MoE experts), as the FP8 tutorial's checkpoint
  bool operator==(const WeightQuant&) const = default;
};
// "bf16" / "none": none; "int8"; "fp8": the FP8 E4M3 the chip's TensorE takes (legacy e4m3 on
// trn1 / trn2, which NxD compiles OCP e4m3fn checkpoints to under UNSAFE_FP8FNCAST; e4m3fn
// from trn3); or a format name (fp8_e4m3, fp8_e4m3fn, fp8_e5m2). Throws InputError naming
// `key` for anything else.
std::optional<num::Format> quantized_weight_format(const arch::ChipSpec& chip,
                                                   std::string_view name,
                                                   std::string_view key = "weights");

// A KV cache's format from vLLM Neuron's kv_cache_dtype: "bf16" / "auto" / "none": unset (the
// model's dtype); "fp8": the FP8 E4M3 the chip's TensorE takes (as quantized_weight_format);
// fp8_e4m3, fp8_e4m3fn, fp8_e5m2 as named. Throws InputError naming kv_cache_dtype otherwise.
std::optional<num::Format> kv_cache_format(const arch::ChipSpec& chip, std::string_view name);

struct BuildOptions {
  int64_t batch = 1, seq = 128;  // a prefill (or encoder) forward over batch x seq tokens
  int tp = 1;                    // tensor-parallel ranks
  int64_t layers = -1;           // -1: the model's; fewer for quick what-ifs
  // Serving: attention reads and writes a KV cache per layer; `past` positions are in it
  // already (a decode step: seq 1, past = the context so far).
  bool kv_cache = false;
  int64_t past = 0;
  // The cache's format when it is quantized (vLLM Neuron's kv_cache_dtype "fp8"; ops.h
  // AttentionSpec::cache_dtype); unset: the model's dtype.
  std::optional<num::Format> kv_cache_dtype = std::nullopt;
  // The token embedding split by vocabulary rows over the ranks (Megatron's and NxD
  // training's VocabParallelEmbedding): each rank looks up the ids in its rows, an all-reduce
  // sums the ranks' rows. Training uses it (each rank then holds and updates 1 / tp of the
  // table); a forward keeps the table replicated, as NxD Inference does by default.
  bool vocab_parallel = false;
  // Expert parallelism inside the tensor-parallel group (NxD Inference's moe_ep_degree with
  // moe_tp_degree = tp / ep): each rank holds experts / ep whole experts' worth of columns,
  // expert_intermediate x ep / tp of each of its experts; the router and the all-reduce after
  // the block are as with ep = 1 (every rank sees every token).
  int ep = 1;
  // Expert parallelism across data-parallel replicas too (training; Megatron's expert-model
  // parallelism, vLLM Neuron's ep_degree = TP x DP): the experts spread over ep x expert_dp
  // ranks, this many replicas' TP groups, each rank holding experts / (ep x expert_dp) whole
  // experts. Its rows come from all expert_dp replicas by an all-to-all the caller times
  // (planner/train.cc); the rank's kernels are as with ep alone, over fewer experts.
  int expert_dp = 1;
  WeightQuant quant;
  // Sequence parallelism (Megatron's, Korthikanti et al. 2022; NxD's sequence_parallel_enabled):
  // between the tensor-parallel blocks the residual stream, the norms and the residual adds
  // hold a rank's shard of the tokens ([T / tp, H]); an all-gather of the normed shard comes
  // before each column-parallel block and a reduce-scatter replaces each all-reduce after a
  // row-parallel one. No KV cache; T a multiple of tp.
  bool sequence_parallel = false;
  // Attention as three ops with the [S, S] scores in HBM (Megatron-LM's CoreAttention, Hugging
  // Face's attn_implementation="eager"; ops.h AttentionSpec::eager) instead of flash
  // attention. Prefill and training only: a KV cache is refused with it.
  bool eager_attention = false;
  // A multi-head model (kv heads = heads) whose heads tp does not divide gets its heads padded
  // to the next multiple of tp, ceil(heads / tp) a rank, the extra ones zero (Transformers
  // NeuronX and NxD Inference pad so: Llama-2 13B's 40 heads over 32 ranks run as 64). The
  // padded heads cost what real ones do. Inference only: a training step needs tp to divide
  // the heads, as Megatron and NxD training do.
  bool pad_heads = false;
  // An encoder (BERT) ends in its masked-LM pretraining head, Hugging Face's
  // BertForPreTraining cls.predictions: a dense H x H with bias, the activation, a LayerNorm
  // and the decoder to the vocabulary (with bias) over every token, whose logits a training
  // step's cross-entropy reads. (The decoder's weight is its own here; HF ties it to the word
  // embeddings. The next-sentence head, [batch, 2] from the first token, is left out.)
  bool mlm_head = false;
};

// Throws InputError for a tp that does not divide the heads or intermediate size (kv heads:
// divide them or be a multiple of them, each rank then keeping one replicated kv head), a
// sequence longer than the model's learned positions, and MoE experts that are not GLUs.
Graph build_model_graph(const ModelConfig& m, const BuildOptions& o);

// Whether the model splits over `shards` tensor-parallel shards as build_model_graph requires:
// they divide the heads and the (expert) intermediate size, and divide the kv heads or are a
// multiple of them (each shard then keeps one replicated kv head). With expert parallelism
// `ep`: ep divides the shards and the experts, shards / ep the expert intermediate size.
bool splits_into(const ModelConfig& m, int64_t shards, int64_t ep = 1);

}  // namespace trnsim::graph
