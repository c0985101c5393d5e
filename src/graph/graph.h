// The model compiler's graph IR: values (tensors with a shape and dtype; weights, inputs and
// activations) and nodes (operators), in execution order. A node is either one of the
// front end's operators (what torch.export or a model family produces: linear, norm, add,
// act, mul, rope, head_norm, attention, embedding, all_reduce) or, after the fusion passes
// (fusion.h), a fused operator that one kernel of the ops library runs (lower.h).
//
// Shapes are one tensor-parallel rank's: a column-parallel weight holds out / tp columns, a
// row-parallel one in / tp rows, and an all_reduce node sums the ranks' partial results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/rope.h"
#include "numerics/format.h"
#include "ops/ops.h"

namespace trnsim::graph {

// kCache: state a node updates in place (a KV cache), held across calls like a weight;
// kOptState: an optimizer's state of a weight (fp32 master copy, AdamW moments), likewise.
enum class ValueKind : uint8_t { kInput, kWeight, kActivation, kOutput, kCache, kOptState };

struct Value {
  std::string name;  // "layers.3.mlp.up" (activations), the checkpoint name for weights
  std::vector<int64_t> shape;
  num::Format dtype = num::bf16();
  ValueKind kind = ValueKind::kActivation;
  int64_t elements() const;
  int64_t bytes() const;  // saturating, as elements()
};

enum class OpKind : uint8_t {
  kEmbedding,  // in: ids (, pos_ids, type_ids); weights table (, pos_table, type_table)
  kNorm,       // in: x; weights gamma (, beta)
  kLinear,     // in: x; weights w (, b): y = x @ w (+ b)
  kAdd,        // in: a, b
  kMul,        // in: a, b
  kAct,        // in: x
  kHeadNorm,   // in: x [T, H*d]: RMSNorm of each head over d; weight gamma [d]
  kRope,       // in: x [T, H*d]: rotary embedding of each head
  kAttention,  // in: q, k, v
  kAllReduce,  // in: partial sums of the tensor-parallel ranks
  // Sequence parallelism (build.h BuildOptions::sequence_parallel): the ranks' token shards
  // [T / tp, F] gathered into [T, F]; partial sums [T, F] reduced, each rank keeping its
  // shard [T / tp, F].
  kAllGather,
  kReduceScatter,
  kMoe,  // in: x; weights router [H, E], then each expert's gate, up [H, I], down [I, H]
  // Training (backward.h generates them; a front end may not): each reads and writes the
  // tensors its `ports` name (the kernel's, ops/train_ops.h), inputs then outputs.
  kLinearGradInput,   // dy0.. [, dacc], w -> dx
  kLinearGradWeight,  // x, dy0.. -> dw per weight [, db per bias]
  kAttentionGrad,     // q, k, v, out, dout, lse -> dq, dk, dv
  kNormGrad,          // x, dy [, dres] -> dx, dgamma [, dbeta]
  kActGrad,           // x, dy -> dx; GLU: gate, up, dy -> dgate, dup
  kEmbeddingGrad,     // ids, dy -> dtable
  kCrossEntropy,      // logits, labels -> loss, dlogits
  kAdamW,             // grad; state w, master, m, v (updated in place)
  kMoeGrad,           // x, dy, the forward's saved tensors (backward.cc save_moe); weights as the
                      // kMoe's -> dx, a dw per weight
};
std::string_view name(OpKind k);
bool is_training_op(OpKind k);

struct Node {
  std::string name;  // "layers.3.self_attn.q_proj"
  OpKind kind = OpKind::kLinear;
  std::vector<int> inputs, weights, outputs;  // value ids
  // linear: weights are w (or one per output, concatenated by columns; [w_gate, w_up] for a
  // GLU), biases one per weight; norm (and a linear with a fused norm): gamma (, beta);
  // attention with qk_norm: q and k gamma.
  std::vector<int> biases, norm_weights;
  // Quantized weights (build.h WeightQuant): per weight, its per-output-channel fp32 scale
  // value ([out], ops.h LinearSpec::weight_scale), -1 for a weight kept in the model's dtype;
  // empty when none is quantized.
  std::vector<int> scales;
  std::vector<int> state;  // attention with a KV cache: k_cache, v_cache (updated in place)
  // Attributes (those of the kind; the fusion passes set the fused ones).
  ops::Norm norm = ops::Norm::kNone;  // kNorm; fused into a linear: its prologue
  double eps = 1e-5;
  ops::Act act = ops::Act::kNone;  // kAct; fused into a linear: its epilogue
  bool residual_in = false;        // linear / norm: inputs[0] + inputs[1], output h first
  bool residual_out = false;       // linear: + inputs.back() at the end
  std::vector<int64_t> splits;     // linear: columns of each output (horizontal fusion)
  int64_t heads = 0, kv_heads = 0, head_dim = 0;  // attention, rope, head_norm
  int64_t experts = 0, top_k = 0;                 // moe
  bool norm_top_k = true;                         // moe: ModelConfig::norm_top_k
  int64_t expert_ranks = 1;  // moe: expert parallelism (build.h ep); this rank's experts / ep
  int64_t expert_dp = 1;     // moe: and across replicas (build.h); experts / (ep x expert_dp)
  bool causal = true, rope = false, qk_norm = false;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;    // attention, rope: ModelConfig::rope_scaling
  int64_t batch = 1, seq = 0;  // attention, rope: the tokens are batch x seq
  bool kv_cache = false;       // attention: keys and values through a KV cache
  // attention (and its grad): eager, the [S, S] scores and probabilities through HBM as
  // separate ops (ops.h AttentionSpec::eager; build.h BuildOptions::eager_attention)
  bool eager = false;
  int64_t kv_seq = 0;              // ... of this many positions per sequence (>= seq)
  int repeat_of = -1;              // layer number (-1: not inside a repeated layer)
  std::vector<std::string> fused;  // names of the front-end nodes this node replaced
  bool dead = false;               // removed by a pass
  // Tensor-parallel: a column-parallel linear (each rank reads all of x, writes its share of
  // the columns), whose input gradient is a partial sum over the ranks (an all-reduce in the
  // backward, Megatron's f).
  bool column_parallel = false;
  // Training nodes: the kernel tensor each of inputs, then outputs, binds to ("dy0", "w");
  // state (AdamW: w, master, m, v) binds in the order the kernel lists it.
  std::vector<std::string> ports;
  double loss_scale = 1.0;  // kCrossEntropy: 1 / the tokens the loss averages over
  int64_t rows = 0;         // kNormGrad of a per-head norm: tokens x heads rows of head_dim
};

// AdamW's hyperparameters (torch.optim.AdamW's, ops/train_ops.h AdamWSpec).
struct OptimizerParams {
  double lr = 1e-4, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  int64_t step = 1;
  bool stochastic_rounding = true;
  uint64_t seed = 0;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  int tp = 1;  // tensor-parallel ranks the shapes are for
  int64_t batch = 1, seq = 0;
  // Sequence parallelism: activations may also be a rank's shard of the tokens, [batch x seq
  // / tp, features] (between a reduce_scatter and an all_gather).
  bool sequence_parallel = false;
  OptimizerParams optimizer;  // of the kAdamW nodes of a training graph

  int add_value(Value v);
  int add_node(Node n);
  // Nodes that read value `v` (not dead).
  std::vector<int> consumers(int v) const;
  int producer(int v) const;  // -1 for inputs and weights
  // Removes dead nodes and values no node touches; keeps order.
  void compact();
  // One line per node: "name kind [inputs] -> [outputs] attrs".
  std::string dump() const;
  // Checks what lowering relies on, for graphs from any front end: each node's operand counts,
  // value kinds and shapes (activations [batch x seq, features], or with sequence parallelism
  // [batch x seq / tp, features]; a linear's weight [in, out]
  // matching its input; attention heads and head_dim matching q, k, v). Throws InputError
  // naming the node and the operand.
  void validate() const;
};

}  // namespace trnsim::graph
