#include "graph/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace trnsim::graph {

namespace {

int only_consumer(const Graph& g, int v) {
  const auto c = g.consumers(v);
  return c.size() == 1 ? c[0] : -1;
}

bool is_output(const Graph& g, int v) {
  return g.values[static_cast<size_t>(v)].kind == ValueKind::kOutput;
}

void absorb(Node& into, Node& from) {
  into.fused.push_back(from.name);
  for (auto& f : from.fused) into.fused.push_back(f);
  from.dead = true;
}

bool plain_linear(const Node& n) {
  return n.kind == OpKind::kLinear && !n.dead && n.act == ops::Act::kNone &&
         n.norm == ops::Norm::kNone && !n.residual_in && !n.residual_out;
}

int horizontal(Graph& g) {
  int fired = 0;
  std::map<int, std::vector<int>> by_input;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (plain_linear(g.nodes[i]) && g.nodes[i].outputs.size() == 1)
      by_input[g.nodes[i].inputs[0]].push_back(static_cast<int>(i));
  for (auto& [x, ids] : by_input) {
    if (ids.size() < 2) continue;
    Node& first = g.nodes[static_cast<size_t>(ids[0])];
    const bool bias = !first.biases.empty();
    first.splits = {g.values[static_cast<size_t>(first.outputs[0])].shape[1]};
    for (size_t j = 1; j < ids.size(); ++j) {
      Node& n = g.nodes[static_cast<size_t>(ids[j])];
      // One kernel reads every weight in one format, scaled or not.
      const bool same_weights = g.values[static_cast<size_t>(n.weights[0])].dtype ==
                                    g.values[static_cast<size_t>(first.weights[0])].dtype &&
                                n.scales.empty() == first.scales.empty();
      if (!n.biases.empty() == bias && n.column_parallel == first.column_parallel && same_weights) {
        first.weights.push_back(n.weights[0]);
        if (bias) first.biases.push_back(n.biases[0]);
        if (!n.scales.empty()) first.scales.push_back(n.scales[0]);
        first.outputs.push_back(n.outputs[0]);
        first.splits.push_back(g.values[static_cast<size_t>(n.outputs[0])].shape[1]);
        absorb(first, n);
      }
    }
    // One name for the fused linear: the common prefix and the members' last components.
    const auto dot = first.name.rfind('.');
    std::string joined = first.name;
    for (const auto& f : first.fused)
      if (f.rfind('.') == dot && f.compare(0, dot, first.name, 0, dot) == 0)
        joined += "+" + f.substr(dot + 1);
    first.name = joined;
    ++fired;
  }
  return fired;
}

// act(gate) * up, gate and up the two outputs of one horizontally fused linear.
int glu(Graph& g) {
  int fired = 0;
  for (auto& n : g.nodes) {
    if (n.dead || n.kind != OpKind::kLinear || n.outputs.size() != 2 || n.act != ops::Act::kNone)
      continue;
    const int a = only_consumer(g, n.outputs[0]);
    if (a < 0) continue;
    Node& an = g.nodes[static_cast<size_t>(a)];
    if (an.kind != OpKind::kAct || is_output(g, n.outputs[0])) continue;
    const int mu = only_consumer(g, an.outputs[0]);
    if (mu < 0) continue;
    Node& mn = g.nodes[static_cast<size_t>(mu)];
    if (mn.kind != OpKind::kMul || only_consumer(g, n.outputs[1]) != mu) continue;
    const ops::Act glu_act = an.act == ops::Act::kSilu   ? ops::Act::kGluSilu
                             : an.act == ops::Act::kGelu ? ops::Act::kGluGelu
                                                         : ops::Act::kNone;
    if (glu_act == ops::Act::kNone) continue;
    n.act = glu_act;
    n.outputs = {mn.outputs[0]};
    n.splits = {g.values[static_cast<size_t>(mn.outputs[0])].shape[1]};
    absorb(n, an);
    absorb(n, mn);
    ++fired;
  }
  return fired;
}

int act_epilogue(Graph& g) {
  int fired = 0;
  for (auto& n : g.nodes) {
    if (n.dead || n.kind != OpKind::kLinear || n.outputs.size() != 1 || n.act != ops::Act::kNone)
      continue;
    const int a = only_consumer(g, n.outputs[0]);
    if (a < 0 || is_output(g, n.outputs[0])) continue;
    Node& an = g.nodes[static_cast<size_t>(a)];
    if (an.kind != OpKind::kAct || n.residual_out) continue;
    n.act = an.act;
    n.outputs = {an.outputs[0]};
    absorb(n, an);
    ++fired;
  }
  return fired;
}

int norm_prologue(Graph& g, int& with_residual) {
  int fired = 0;
  for (auto& nn : g.nodes) {
    if (nn.dead || nn.kind != OpKind::kNorm) continue;
    const int l = only_consumer(g, nn.outputs[0]);
    if (l < 0 || is_output(g, nn.outputs[0])) continue;
    Node& ln = g.nodes[static_cast<size_t>(l)];
    if (ln.kind != OpKind::kLinear || ln.norm != ops::Norm::kNone || ln.residual_in) continue;
    ln.norm = nn.norm;
    ln.eps = nn.eps;
    ln.norm_weights = nn.norm_weights;
    ln.inputs[0] = nn.inputs[0];
    absorb(ln, nn);
    ++fired;
    // The residual add whose sum is this norm's input: the linear reads both addends and
    // writes the sum (h) for the next residual.
    const int add = g.producer(ln.inputs[0]);
    if (add < 0) continue;
    Node& an = g.nodes[static_cast<size_t>(add)];
    if (an.kind != OpKind::kAdd) continue;
    ln.residual_in = true;
    const int sum = an.outputs[0];
    ln.inputs = {an.inputs[0], an.inputs[1]};
    ln.outputs.insert(ln.outputs.begin(), sum);
    absorb(ln, an);
    ++with_residual;
  }
  return fired;
}

int residual_epilogue(Graph& g) {
  int fired = 0;
  for (auto& an : g.nodes) {
    if (an.dead || an.kind != OpKind::kAdd) continue;
    for (int side = 1; side >= 0; --side) {
      const int v = an.inputs[static_cast<size_t>(side)];
      const int p = g.producer(v);
      if (p < 0 || only_consumer(g, v) != &an - g.nodes.data()) continue;
      Node& ln = g.nodes[static_cast<size_t>(p)];
      if (ln.kind != OpKind::kLinear || ln.outputs.size() != 1 || ln.residual_out || ln.residual_in)
        continue;
      ln.residual_out = true;
      ln.inputs.push_back(an.inputs[static_cast<size_t>(1 - side)]);
      ln.outputs = {an.outputs[0]};
      absorb(ln, an);
      ++fired;
      break;
    }
  }
  return fired;
}

int attention_prologue(Graph& g, bool head_norm) {
  int fired = 0;
  for (auto& at : g.nodes) {
    if (at.dead || at.kind != OpKind::kAttention) continue;
    for (int which = 0; which < 2; ++which) {  // q, k
      int v = at.inputs[static_cast<size_t>(which)];
      int p = g.producer(v);
      if (p >= 0 && g.nodes[static_cast<size_t>(p)].kind == OpKind::kRope &&
          only_consumer(g, v) >= 0) {
        Node& r = g.nodes[static_cast<size_t>(p)];
        at.rope = true;
        at.rope_theta = r.rope_theta;
        at.rope_scaling = r.rope_scaling;
        v = at.inputs[static_cast<size_t>(which)] = r.inputs[0];
        absorb(at, r);
        p = g.producer(v);
      }
      if (head_norm && p >= 0 && g.nodes[static_cast<size_t>(p)].kind == OpKind::kHeadNorm &&
          only_consumer(g, v) >= 0) {
        Node& hn = g.nodes[static_cast<size_t>(p)];
        at.qk_norm = true;
        at.eps = hn.eps;
        at.norm_weights.push_back(hn.norm_weights[0]);
        at.inputs[static_cast<size_t>(which)] = hn.inputs[0];
        absorb(at, hn);
      }
    }
    if (at.qk_norm && at.norm_weights.size() != 2) at.qk_norm = false;  // both or neither
    ++fired;
  }
  return fired;
}

int add_norm(Graph& g, bool keep_sum) {
  int fired = 0;
  for (auto& nn : g.nodes) {
    if (nn.dead || nn.kind != OpKind::kNorm || nn.residual_in) continue;
    const int sum = nn.inputs[0];
    const int p = g.producer(sum);
    if (p < 0) continue;
    Node& an = g.nodes[static_cast<size_t>(p)];
    if (an.kind != OpKind::kAdd) continue;
    // A sum others read too (the residual stream of a pre-norm block whose norm feeds no
    // linear, e.g. a MoE block's router and experts): the norm writes it (h) as well. Asked
    // before the norm stops reading it.
    const bool shared = keep_sum || g.consumers(sum).size() > 1 || is_output(g, sum);
    nn.residual_in = true;
    nn.inputs = {an.inputs[0], an.inputs[1]};
    if (shared) nn.outputs.insert(nn.outputs.begin(), sum);
    absorb(nn, an);
    ++fired;
  }
  return fired;
}

}  // namespace

FusionReport fuse(Graph& g, bool all, bool training) {
  FusionReport r;
  r.nodes_before = static_cast<int>(g.nodes.size());
  auto note = [&](const char* what, int n) {
    if (n > 0) r.applied.push_back(fmt::format("{}: {}", what, n));
  };
  if (training && all) {
    note("horizontal linears", horizontal(g));
    note("add + norm", add_norm(g, true));
    note("residual epilogue", residual_epilogue(g));
    note("rope into attention", attention_prologue(g, false));
    g.compact();
    r.nodes_after = static_cast<int>(g.nodes.size());
    return r;
  }
  if (!all) {
    note("rope / qk-norm into attention", attention_prologue(g, !training));
    g.compact();
    r.nodes_after = static_cast<int>(g.nodes.size());
    return r;
  }
  note("horizontal linears", horizontal(g));
  note("GLU epilogue", glu(g));
  note("activation epilogue", act_epilogue(g));
  int with_residual = 0;
  note("norm prologue", norm_prologue(g, with_residual));
  note("residual add into a norm prologue", with_residual);
  note("add + norm", add_norm(g, false));
  note("residual epilogue", residual_epilogue(g));
  note("rope / qk-norm into attention", attention_prologue(g, true));
  g.compact();
  r.nodes_after = static_cast<int>(g.nodes.size());
  return r;
}

}  // namespace trnsim::graph
