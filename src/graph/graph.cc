#include "graph/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace trnsim::graph {

int64_t Value::elements() const {
  // Saturating: a front end's shapes are bounded per dim, not in product.
  constexpr int64_t kCap = int64_t{1} << 62;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d <= 0) return 0;
    if (n > kCap / d) return kCap;
    n *= d;
  }
  return n;
}

int64_t Value::bytes() const {
  const int64_t n = elements(), e = dtype.storage_bytes;
  return n > (int64_t{1} << 62) / e ? int64_t{1} << 62 : n * e;
}

std::string_view name(OpKind k) {
  switch (k) {
    case OpKind::kEmbedding:
      return "embedding";
    case OpKind::kNorm:
      return "norm";
    case OpKind::kLinear:
      return "linear";
    case OpKind::kAdd:
      return "add";
    case OpKind::kMul:
      return "mul";
    case OpKind::kAct:
      return "act";
    case OpKind::kHeadNorm:
      return "head_norm";
    case OpKind::kRope:
      return "rope";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kAllReduce:
      return "all_reduce";
    case OpKind::kAllGather:
      return "all_gather";
    case OpKind::kReduceScatter:
      return "reduce_scatter";
    case OpKind::kMoe:
      return "moe";
    case OpKind::kLinearGradInput:
      return "linear_grad_input";
    case OpKind::kLinearGradWeight:
      return "linear_grad_weight";
    case OpKind::kAttentionGrad:
      return "attention_grad";
    case OpKind::kNormGrad:
      return "norm_grad";
    case OpKind::kActGrad:
      return "act_grad";
    case OpKind::kEmbeddingGrad:
      return "embedding_grad";
    case OpKind::kCrossEntropy:
      return "cross_entropy";
    case OpKind::kAdamW:
      return "adamw";
    case OpKind::kMoeGrad:
      return "moe_grad";
  }
  return "?";
}

bool is_training_op(OpKind k) { return k >= OpKind::kLinearGradInput; }

int Graph::add_value(Value v) {
  values.push_back(std::move(v));
  return static_cast<int>(values.size()) - 1;
}

int Graph::add_node(Node n) {
  nodes.push_back(std::move(n));
  return static_cast<int>(nodes.size()) - 1;
}

std::vector<int> Graph::consumers(int v) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].dead) continue;
    for (int in : nodes[i].inputs)
      if (in == v) {
        out.push_back(static_cast<int>(i));
        break;
      }
  }
  return out;
}

int Graph::producer(int v) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!nodes[i].dead)
      for (int o : nodes[i].outputs)
        if (o == v) return static_cast<int>(i);
  return -1;
}

void Graph::compact() {
  std::vector<Node> kept;
  for (auto& n : nodes)
    if (!n.dead) kept.push_back(std::move(n));
  nodes = std::move(kept);
}

std::string Graph::dump() const {
  std::string out;
  auto names = [&](const std::vector<int>& ids) {
    std::vector<std::string> s;
    for (int i : ids) s.push_back(values[static_cast<size_t>(i)].name);
    return fmt::format("{}", fmt::join(s, ", "));
  };
  for (const Node& n : nodes) {
    if (n.dead) continue;
    out +=
        fmt::format("{} {} [{}] -> [{}]", n.name, name(n.kind), names(n.inputs), names(n.outputs));
    if (n.norm != ops::Norm::kNone) out += fmt::format(" norm={}", ops::name(n.norm));
    if (n.act != ops::Act::kNone) out += fmt::format(" act={}", ops::name(n.act));
    if (n.residual_in) out += " residual_in";
    if (n.residual_out) out += " residual_out";
    if (n.rope && n.kind == OpKind::kAttention) out += " rope";
    if (n.qk_norm) out += " qk_norm";
    if (!n.fused.empty()) out += fmt::format(" fuses {}", fmt::join(n.fused, ","));
    out += "\n";
  }
  return out;
}

void Graph::validate() const {
  const int64_t T = batch * seq;
  const int64_t Ts = sequence_parallel && tp > 1 ? T / tp : T;  // a rank's token shard
  const auto nv = static_cast<int>(values.size());
  for (const Node& n : nodes) {
    if (n.dead) continue;
    auto fail = [&](const std::string& key, const std::string& what) {
      throw InputError(n.name, key, fmt::format("{} {}: {}", name(n.kind), n.name, what));
    };
    auto v = [&](int id) -> const Value& {
      if (id < 0 || id >= nv) fail("value", fmt::format("value id {} out of range", id));
      return values[static_cast<size_t>(id)];
    };
    auto need = [&](const std::vector<int>& ids, size_t lo, size_t hi, const char* key) {
      if (ids.size() < lo || ids.size() > hi)
        fail(key, fmt::format("takes {}{} {}, not {}", lo, hi > lo ? fmt::format("..{}", hi) : "",
                              key, ids.size()));
      for (int id : ids) v(id);
    };
    auto act2d = [&](int id, const char* key) -> int64_t {
      const Value& x = v(id);
      if (x.shape.size() != 2 || (x.shape[0] != T && x.shape[0] != Ts))
        fail(key, fmt::format("'{}' is [{}]; an activation here is [{} tokens, features]{}", x.name,
                              fmt::join(x.shape, ", "), T,
                              Ts != T ? fmt::format(" or a rank's shard [{}, features]", Ts) : ""));
      return x.shape[1];
    };
    auto rows = [&](int id) { return v(id).shape[0]; };
    need(n.outputs, 1, 64, "outputs");
    for (const auto* ids : {&n.inputs, &n.outputs, &n.weights, &n.biases, &n.norm_weights})
      for (int id : *ids)
        if (v(id).elements() > (int64_t{1} << 40))
          fail("shape", fmt::format("'{}' has more than 2^40 elements", v(id).name));
    // Quantized weights: per weight a scale [out] fp32 (or -1: not quantized), the weight in a
    // 1-byte format (ops.h LinearSpec::weight_dtype).
    if (!n.scales.empty()) {
      if (n.scales.size() != n.weights.size()) fail("scales", "one per weight (-1: none)");
      for (size_t i = 0; i < n.scales.size(); ++i) {
        if (n.scales[i] < 0) continue;
        const Value &w = v(n.weights[i]), &sc = v(n.scales[i]);
        if (w.shape.size() != 2 || sc.elements() != w.shape[1] || sc.dtype != num::fp32())
          fail("scales",
               fmt::format("'{}' must be fp32 with one value per column of '{}'", sc.name, w.name));
        if (w.dtype.storage_bytes != 1)
          fail("scales",
               fmt::format("'{}' is {}; a scaled weight is int8 or FP8", w.name, w.dtype.name()));
      }
    }
    // Every output is an activation [tokens, features] as wide as the operator makes it.
    std::vector<int64_t> out_w;
    for (int id : n.outputs) out_w.push_back(act2d(id, "outputs"));
    auto same_width = [&](int64_t f) {
      for (int64_t w : out_w)
        if (w != f) fail("outputs", fmt::format("{} features; the operator makes {}", w, f));
    };
    switch (n.kind) {
      case OpKind::kEmbedding: {
        need(n.inputs, 1, 2, "inputs");
        need(n.weights, 1, 2, "weights");
        if (v(n.inputs[0]).elements() != T && v(n.inputs[0]).elements() != Ts)
          fail("inputs", fmt::format("{} token ids, not {}", v(n.inputs[0]).elements(), T));
        if (v(n.weights[0]).shape.size() != 2) fail("weights", "the table is [vocab, hidden]");
        same_width(v(n.weights[0]).shape[1]);
        break;
      }
      case OpKind::kLinear: {
        need(n.inputs, 1, 3, "inputs");
        need(n.weights, 1, 64, "weights");
        const int64_t k = act2d(n.inputs[0], "inputs");
        for (int w : n.weights) {
          const Value& x = v(w);
          if (x.shape.size() != 2 || x.shape[0] != k)
            fail("weights",
                 fmt::format("'{}' is [{}]; the input has {} features, so it must be [{}, out]",
                             x.name, fmt::join(x.shape, ", "), k, k));
        }
        if (!n.biases.empty() && n.biases.size() != n.weights.size())
          fail("biases", "one per weight");
        for (size_t i = 0; i < n.biases.size(); ++i)
          if (v(n.biases[i]).elements() != v(n.weights[i]).shape[1])
            fail("biases", "one per output column");
        if (n.weights.size() == 1) same_width(v(n.weights[0]).shape[1]);
        break;
      }
      case OpKind::kNorm: {
        need(n.inputs, 1, 2, "inputs");
        if (n.norm == ops::Norm::kNone) fail("norm", "rmsnorm or layernorm");
        need(n.norm_weights, n.norm == ops::Norm::kLayer ? 2 : 1, 2, "norm_weights");
        const int64_t f = act2d(n.inputs[0], "inputs");
        for (int w : n.norm_weights)
          if (v(w).elements() != f) fail("norm_weights", fmt::format("{} features", f));
        same_width(f);
        break;
      }
      case OpKind::kAdd:
      case OpKind::kMul:
        need(n.inputs, 2, 2, "inputs");
        if (act2d(n.inputs[0], "inputs") != act2d(n.inputs[1], "inputs") ||
            rows(n.inputs[0]) != rows(n.inputs[1]))
          fail("inputs", "shapes differ");
        same_width(act2d(n.inputs[0], "inputs"));
        break;
      case OpKind::kAct:
        need(n.inputs, 1, 1, "inputs");
        same_width(act2d(n.inputs[0], "inputs"));
        if (n.act == ops::Act::kNone || ops::is_glu(n.act))
          fail("act", "silu, gelu, gelu_tanh or relu");
        break;
      case OpKind::kAttention: {
        need(n.inputs, 3, 3, "inputs");
        if (n.heads < 1 || n.kv_heads < 1 || n.head_dim < 1 || n.heads % n.kv_heads != 0)
          fail("heads",
               fmt::format("{} heads, {} kv heads of {}", n.heads, n.kv_heads, n.head_dim));
        if (act2d(n.inputs[0], "inputs") != n.heads * n.head_dim)
          fail("inputs", "q is not heads x head_dim wide");
        for (int i = 1; i < 3; ++i)
          if (act2d(n.inputs[static_cast<size_t>(i)], "inputs") != n.kv_heads * n.head_dim)
            fail("inputs", "k and v are not kv_heads x head_dim wide");
        same_width(n.heads * n.head_dim);
        if (n.kv_cache) {
          need(n.state, 2, 2, "state");
          if (n.kv_seq < seq)
            fail("kv_seq", fmt::format("{} positions, fewer than seq {}", n.kv_seq, seq));
          for (int c : n.state)
            if (v(c).elements() != batch * n.kv_seq * n.kv_heads * n.head_dim)
              fail("state", fmt::format("'{}' is not a cache of {} x {} positions", v(c).name,
                                        batch, n.kv_seq));
        }
        break;
      }
      case OpKind::kHeadNorm:
      case OpKind::kRope:
      case OpKind::kAllReduce:
        need(n.inputs, 1, 1, "inputs");
        same_width(act2d(n.inputs[0], "inputs"));
        break;
      case OpKind::kAllGather:
      case OpKind::kReduceScatter: {
        need(n.inputs, 1, 1, "inputs");
        same_width(act2d(n.inputs[0], "inputs"));
        const bool gather = n.kind == OpKind::kAllGather;
        if (Ts == T || rows(n.inputs[0]) != (gather ? Ts : T) ||
            rows(n.outputs[0]) != (gather ? T : Ts))
          fail("inputs", fmt::format("{} takes [{}, F] to [{}, F] (sequence parallelism over {} "
                                     "ranks)",
                                     name(n.kind), gather ? Ts : T, gather ? T : Ts, tp));
        break;
      }
      case OpKind::kLinearGradInput:
      case OpKind::kLinearGradWeight:
      case OpKind::kAttentionGrad:
      case OpKind::kNormGrad:
      case OpKind::kActGrad:
      case OpKind::kEmbeddingGrad:
      case OpKind::kCrossEntropy:
      case OpKind::kAdamW:
      case OpKind::kMoeGrad:
        fail("kind",
             "a training operator is generated by the compiler from the forward graph "
             "(trnsim model --train), not given by a front end");
        break;
      case OpKind::kMoe:
        need(n.inputs, 1, 1, "inputs");
        if (n.experts < 2 || n.top_k < 1 || n.top_k > std::min<int64_t>(8, n.experts))
          fail("experts", fmt::format("{} experts, top {}", n.experts, n.top_k));
        if (n.expert_ranks < 1 || n.expert_dp < 1 ||
            n.experts % (n.expert_ranks * n.expert_dp) != 0)
          fail("expert_ranks", fmt::format("{} x {} expert-parallel ranks for {} experts",
                                           n.expert_ranks, n.expert_dp, n.experts));
        else
          need(n.weights, static_cast<size_t>(1 + 3 * n.experts / (n.expert_ranks * n.expert_dp)),
               static_cast<size_t>(1 + 3 * n.experts / (n.expert_ranks * n.expert_dp)), "weights");
        same_width(act2d(n.inputs[0], "inputs"));
        break;
    }
  }
}

}  // namespace trnsim::graph
