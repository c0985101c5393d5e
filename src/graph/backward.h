// Training graphs: a forward graph fused for training (fusion.h, `training`) extended with the
// loss, the backward and the optimizer step, as one compiled step the way the Neuron compiler
// compiles a training step (NxD's joint forward-backward-optimizer graph).
//
// Reverse mode over the fused forward, node by node in reverse order, each rule emitting the
// backward kernels of ops/train_ops.h:
//   linear       -> linear_grad_input (dx; a partial sum over the ranks for a column-parallel
//                   linear, all-reduced once the input's gradients are summed) and
//                   linear_grad_weight (dw, db; fp32)
//   attention    -> attention_grad (the forward saves each row's log-sum-exp)
//   norm         -> norm_grad, the residual stream's gradient folded in as dres
//   act * up     -> act_grad of the GLU (a gated MLP's act and mul together); act -> act_grad
//   add          -> the gradient to both addends (no kernel); all_reduce -> identity;
//   reduce_scatter -> all-gather of dy; all_gather -> reduce-scatter of the partial dy
//   (sequence parallelism; a norm over a token shard also all-reduces its weights' gradients)
//   embedding    -> embedding_grad (scatter-add of the rows)
// A value read by several nodes gets the sum of their gradients (add kernels). The loss is
// softmax cross-entropy of the model's output (the LM head's logits) against `labels`, the
// mean over the batch's tokens; every weight then gets one AdamW step (fp32 master copy and
// moments as optimizer state, the weight written back in its dtype).
#pragma once

#include <map>
#include <vector>

#include "graph/graph.h"

namespace trnsim::graph {

struct TrainGraph {
  int labels = -1, loss = -1;       // value ids: labels [T] int32 input, loss [T] fp32 output
  std::map<int, int> weight_grads;  // weight value id -> its gradient's value id
  int backward_nodes = 0, optimizer_nodes = 0;
};

// Extends `g` in place. Throws InputError for what has no backward yet (mixture-of-experts
// blocks, attention through a KV cache) and for a model whose output is not logits to a
// vocabulary (an encoder without its pretraining head).
TrainGraph add_training(Graph& g, const OptimizerParams& opt);

// The index of a training graph's loss node (its forward ends there, its backward follows);
// g.nodes.size() for a graph without one.
size_t loss_node(const Graph& g);

// The activations a training graph's forward writes and its backward reads (value ids): what
// a step holds from a micro-batch's forward until its backward, per rank.
std::vector<int> saved_activations(const Graph& g);

}  // namespace trnsim::graph
