#include "graph/graph.h"

#include <fmt/format.h>

#include <numeric>

namespace trnsim::graph {

int64_t Value::elements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
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
    case OpKind::kMoe:
      return "moe";
  }
  return "?";
}

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

}  // namespace trnsim::graph
