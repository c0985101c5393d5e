// A graph from a front end as JSON (trnsim.torch builds it from a torch.export program):
//   {"batch": B, "seq": S, "tp": 1, "sequence_parallel": false,
//    "values": [{"name", "shape": [..], "dtype": "bf16", "kind":
//    "input|weight|activation|output"}], "nodes": [{"name", "kind": "linear|norm|...", "inputs":
//    [ids], "weights": [ids],
//               "biases": [ids], "norm_weights": [ids], "outputs": [ids], "norm": "rmsnorm",
//               "eps", "act": "silu", "heads", "kv_heads", "head_dim", "causal",
//               "eager" (attention: graph.h Node::eager), "source": "model.py:42"}]}
// Value ids index "values". Weights of linears are [in, out].
#pragma once

#include <string>
#include <string_view>

#include "graph/graph.h"

namespace trnsim::graph {

// Throws InputError naming the node (and its source line when given) and the key for a
// missing or mistyped field, an unknown kind, norm or activation, or a value id out of range.
Graph graph_from_json(std::string_view json_text);

}  // namespace trnsim::graph
