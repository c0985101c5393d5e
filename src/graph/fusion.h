// The fusion passes: front-end operators (graph.h) into the fused operators the ops library
// runs as one kernel each, so that intermediates stay in SBUF instead of a round trip
// through HBM. In order:
//  1. horizontal: linears reading the same value (q, k, v; gate, up) become one linear with
//     concatenated columns and one output per original (one pass over x instead of several);
//  2. gated MLP: act(x @ w_gate) * (x @ w_up) becomes a GLU epilogue;
//  3. activation epilogue: an activation whose input only it reads folds into the linear;
//  4. norm prologue: a norm whose output only linears read folds into that linear, and the
//     residual add that feeds it (pre-norm blocks) too (the linear writes the sum, h);
//  5. residual epilogue: an add of a linear's result (read by nothing else) into the linear;
//  6. attention: per-head q / k norms and rotary embeddings fold into the attention kernel;
//  7. add + norm: a residual add feeding a norm (no linear took it) folds into the norm, which
//     writes the sum too when something else reads it.
// What no pass fuses stays a node of its own (an elementwise kernel, lower.h).
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace trnsim::graph {

struct FusionReport {
  int nodes_before = 0, nodes_after = 0;
  std::vector<std::string> applied;  // "norm prologue: 65", per pass that fired
};

// `all` false runs only pass 6, which the ops library requires (it has no standalone RoPE or
// per-head norm kernel): the unfused baseline `trnsim model --no-fuse` compares against.
//
// `training`: the forward of a training step, whose backward (backward.h) reads what the
// forward saved. Only passes that hide no tensor the backward needs run: 1, 5, 6 for RoPE
// (recomputed in the attention backward; a per-head norm stays a norm kernel over
// tokens x heads rows) and 7 with the sum always written (the norm's backward reads it).
// Not 2-4: the pre-activations of an activation or GLU and the normalised input of a linear
// are what the backward's act and weight gradients read, so they go through HBM.
FusionReport fuse(Graph& g, bool all = true, bool training = false);

}  // namespace trnsim::graph
