#include "graph/backward.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "graph/lower.h"

namespace trnsim::graph {

namespace {

class Backward {
 public:
  explicit Backward(Graph& g) : g_(g), T_(g.batch * g.seq) {}

  TrainGraph run(const OptimizerParams& opt) {
    const size_t forward = g_.nodes.size();
    for (size_t i = 0; i < forward; ++i) check_supported(g_.nodes[i]);
    for (size_t i = 0; i < forward; ++i) {
      if (g_.nodes[i].kind == OpKind::kAttention) save_lse(i);
      if (g_.nodes[i].kind == OpKind::kMoe) save_moe(i);
    }
    loss();
    for (size_t i = forward; i-- > 0;) {
      if (handled_.contains(i)) continue;
      backward(i);
    }
    tg_.backward_nodes = static_cast<int>(g_.nodes.size() - forward);
    g_.optimizer = opt;
    optimizer();
    return tg_;
  }

 private:
  struct Part {
    int value;
    bool partial;  // a partial sum over the tensor-parallel ranks
  };

  const Value& val(int id) const { return g_.values[static_cast<size_t>(id)]; }
  // A copy, not a reference: adding values reallocates the vector.
  Node node(size_t i) const { return g_.nodes[i]; }

  int new_value(const std::string& name, std::vector<int64_t> shape, num::Format dt,
                ValueKind kind = ValueKind::kActivation) {
    return g_.add_value({name, std::move(shape), dt, kind});
  }
  int grad_like(int v, const std::string& suffix = ".grad") {
    const Value& x = val(v);
    return new_value(x.name + suffix, x.shape,
                     x.kind == ValueKind::kWeight ? num::fp32() : x.dtype);
  }
  void emit(Node n, int repeat_of) {
    n.repeat_of = repeat_of;
    g_.add_node(std::move(n));
  }
  static Node make(std::string name, OpKind kind, std::vector<int> in,
                   std::vector<std::string> ports, std::vector<int> out) {
    Node n;
    n.name = std::move(name);
    n.kind = kind;
    n.inputs = std::move(in);
    n.outputs = std::move(out);
    n.ports = std::move(ports);
    return n;
  }

  void check_supported(const Node& n) const {
    if (n.kv_cache) throw InputError(n.name, "train", "a training step has no KV cache");
    if (n.kind == OpKind::kRope)
      throw InputError(n.name, "train", "a rotary embedding must feed an attention's q or k");
  }

  // The forward attention also writes what its backward reads: flash attention its softmax
  // statistics, eager attention the probabilities (autograd's saved tensor).
  void save_lse(size_t i) {
    const Node& a = g_.nodes[i];
    const int saved = a.eager ? new_value(a.name + ".probs", {a.batch * a.heads * a.seq, a.seq},
                                          val(a.outputs[0]).dtype)
                              : new_value(a.name + ".lse", {T_, a.heads}, num::fp32());
    g_.nodes[i].outputs.push_back(saved);
  }

  // What a MoE block's backward reads besides x and dy, as Megatron's MoE layer keeps it: the
  // router's probabilities, this rank's dispatched token rows, the experts' gate and up
  // projections and GLU output, and the experts' outputs before the combine (lower_moe.cc has
  // the shapes' routing).
  void save_moe(size_t i) {
    const Node n = node(i);
    const int64_t H = val(n.inputs[0]).shape.back(), I = val(n.weights[1]).shape[1];
    const int64_t rows = moe_rank_rows(g_, n);
    const num::Format dt = val(n.outputs[0]).dtype;
    const std::vector<int> saved = {new_value(n.name + ".probs", {T_, n.experts}, num::fp32()),
                                    new_value(n.name + ".dispatched", {rows, H}, dt),
                                    new_value(n.name + ".gate_up", {rows, 2 * I}, dt),
                                    new_value(n.name + ".act", {rows, I}, dt),
                                    new_value(n.name + ".expert_out", {rows, H}, dt)};
    auto& outs = g_.nodes[i].outputs;
    outs.insert(outs.end(), saved.begin(), saved.end());
  }

  void loss() {
    int out = -1;
    for (size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].kind == ValueKind::kOutput) {
        if (out >= 0)
          throw InputError("train", "outputs", "a training step needs one output (the logits)");
        out = static_cast<int>(v);
      }
    if (out < 0 || val(out).shape.size() != 2 || val(out).dtype.kind != num::Kind::kFloat)
      throw InputError("train", "outputs",
                       "a training step needs the model's logits [tokens, vocabulary] as its "
                       "output");
    g_.values[static_cast<size_t>(out)].kind = ValueKind::kActivation;
    tg_.labels = new_value("labels", {T_}, num::int_format(num::Dtype::kInt32), ValueKind::kInput);
    tg_.loss = new_value("loss", {T_}, num::fp32(), ValueKind::kOutput);
    const int dlogits = grad_like(out);
    Node n = make("loss", OpKind::kCrossEntropy, {out, tg_.labels}, {"logits", "labels"},
                  {tg_.loss, dlogits});
    n.ports.insert(n.ports.end(), {"loss", "dlogits"});
    n.loss_scale = 1.0 / static_cast<double>(T_);
    emit(std::move(n), -1);
    parts_[out].push_back({dlogits, false});
  }

  int sum(const std::vector<int>& vs, const std::string& base, int repeat_of) {
    int acc = vs[0];
    for (size_t i = 1; i < vs.size(); ++i) {
      const int out = grad_like(vs[0], fmt::format(".sum{}", i));
      Node n = make(base + fmt::format(".grad_sum{}", i), OpKind::kAdd, {acc, vs[i]}, {}, {out});
      emit(std::move(n), repeat_of);
      acc = out;
    }
    return acc;
  }

  // The gradient of v: its parts summed, the partial ones all-reduced first. -1: v does not
  // reach the loss.
  int grad(int v, int repeat_of) {
    auto it = parts_.find(v);
    if (it == parts_.end() || it->second.empty()) return -1;
    std::vector<int> partial, full;
    for (const Part& p : it->second) (p.partial ? partial : full).push_back(p.value);
    const std::string base = val(v).name;
    if (!partial.empty()) {
      const int s = sum(partial, base + ".partial", repeat_of);
      const int r = grad_like(v, ".grad_reduced");
      emit(make(base + ".grad_all_reduce", OpKind::kAllReduce, {s}, {}, {r}), repeat_of);
      full.push_back(r);
    }
    const int g = sum(full, base, repeat_of);
    it->second = {{g, false}};
    return g;
  }
  int need_grad(int v, const Node& n) {
    const int gv = grad(v, n.repeat_of);
    if (gv < 0)
      throw InputError(n.name, "train",
                       fmt::format("its output {} does not reach the loss", val(v).name));
    return gv;
  }
  void add_part(int v, int gv, bool partial = false) {
    if (val(v).kind == ValueKind::kInput) return;  // ids, or activations given by the caller
    if (val(v).kind == ValueKind::kWeight) {
      auto [it, fresh] = tg_.weight_grads.emplace(v, gv);
      if (!fresh) {  // a weight read twice (tied): the gradients add
        const int s = grad_like(v, ".grad_tied");
        emit(make(val(v).name + ".grad_tied", OpKind::kAdd, {it->second, gv}, {}, {s}), -1);
        it->second = s;
      }
      return;
    }
    parts_[v].push_back({gv, partial});
  }

  void backward(size_t i) {
    const Node n = node(i);
    switch (n.kind) {
      case OpKind::kLinear:
        return linear(n);
      case OpKind::kAttention:
        return attention(n);
      case OpKind::kNorm:
      case OpKind::kHeadNorm:
        return norm(n);
      case OpKind::kAdd: {
        const int dy = grad(n.outputs[0], n.repeat_of);
        if (dy < 0) return;
        add_part(n.inputs[0], dy);
        add_part(n.inputs[1], dy);
        return;
      }
      case OpKind::kAllReduce: {
        // Each rank holds the whole sum's gradient: the backward of the sum is the identity.
        const int dy = grad(n.outputs[0], n.repeat_of);
        if (dy >= 0) add_part(n.inputs[0], dy);
        return;
      }
      case OpKind::kReduceScatter: {
        // Each rank holds its shard of the sum's gradient; every rank's partial input needs
        // all of it: an all-gather.
        const int dy = grad(n.outputs[0], n.repeat_of);
        if (dy < 0) return;
        const int dx = grad_like(n.inputs[0]);
        emit(make(n.name + ".grad", OpKind::kAllGather, {dy}, {}, {dx}), n.repeat_of);
        add_part(n.inputs[0], dx);
        return;
      }
      case OpKind::kAllGather:
        return all_gather(n);
      case OpKind::kMul:
        return mul(n, i);
      case OpKind::kAct:
        return act(n);
      case OpKind::kEmbedding:
        return embedding(n);
      case OpKind::kMoe:
        return moe(n);
      default:
        throw InternalError(fmt::format("backward: no rule for {} ({})", n.name, name(n.kind)));
    }
  }

  void linear(const Node& n) {
    const int x = n.inputs[0];
    std::vector<int> dys;
    for (int o : n.outputs) dys.push_back(need_grad(o, n));
    if (n.residual_out) add_part(n.inputs.back(), dys[0]);
    std::vector<std::string> dy_ports;
    for (size_t j = 0; j < dys.size(); ++j) dy_ports.push_back(fmt::format("dy{}", j));
    // dw (and db) per weight of the (horizontally fused) linear. With sequence parallelism the
    // forward keeps only the rank's shard of a gathered input, and the backward gathers it again
    // for x^T dy (Megatron's and NxD's column-parallel linears do).
    int xw = x;
    if (const int p = g_.producer(x);
        p >= 0 && g_.nodes[static_cast<size_t>(p)].kind == OpKind::kAllGather) {
      const Node ag = node(static_cast<size_t>(p));
      xw = new_value(val(x).name + ".regathered", val(x).shape, val(x).dtype);
      emit(make(ag.name + ".regather", OpKind::kAllGather, {ag.inputs[0]}, {}, {xw}), n.repeat_of);
    }
    // grad-input before grad-weight (Megatron's and NxD's order): the collective on dx then
    // runs beside the grad-weight matmul, which does not read it (stream_schedule.h).
    if (val(x).kind != ValueKind::kInput) {
      Node gi = make(n.name + ".grad_input", OpKind::kLinearGradInput, dys, dy_ports, {});
      for (int w : n.weights) {
        gi.inputs.push_back(w);
        gi.ports.push_back("w");
      }
      const int dx = grad_like(x, ".grad_" + n.name.substr(n.name.rfind('.') + 1));
      gi.outputs = {dx};
      gi.ports.push_back("dx");
      gi.splits = n.splits;
      gi.fused = {n.name};
      emit(gi, n.repeat_of);
      add_part(x, dx, n.column_parallel);
    }
    Node gw = make(n.name + ".grad_weight", OpKind::kLinearGradWeight, {xw}, {"x"}, {});
    for (size_t j = 0; j < dys.size(); ++j) {
      gw.inputs.push_back(dys[j]);
      gw.ports.push_back(dy_ports[j]);
    }
    std::vector<int> dws, dbs;
    for (int w : n.weights) dws.push_back(grad_like(w));
    for (int b : n.biases) dbs.push_back(grad_like(b));
    for (int d : dws) {
      gw.outputs.push_back(d);
      gw.ports.push_back("dw");
    }
    for (int d : dbs) {
      gw.outputs.push_back(d);
      gw.ports.push_back("db");
    }
    gw.splits = n.splits;
    gw.fused = {n.name};
    emit(gw, n.repeat_of);
    for (size_t j = 0; j < dws.size(); ++j) add_part(n.weights[j], dws[j]);
    for (size_t j = 0; j < dbs.size(); ++j) add_part(n.biases[j], dbs[j]);
  }

  void attention(const Node& n) {
    const int dout = need_grad(n.outputs[0], n);
    Node a = n;
    a.name = n.name + ".grad";
    a.kind = OpKind::kAttentionGrad;
    if (n.eager) {  // autograd's backward of the three ops reads the saved probabilities
      a.inputs = {n.inputs[0], n.inputs[1], n.inputs[2], dout, n.outputs[1]};
      a.ports = {"q", "k", "v", "dout", "probs", "dq", "dk", "dv"};
    } else {
      a.inputs = {n.inputs[0], n.inputs[1], n.inputs[2], n.outputs[0], dout, n.outputs[1]};
      a.ports = {"q", "k", "v", "out", "dout", "lse", "dq", "dk", "dv"};
    }
    a.outputs = {grad_like(n.inputs[0]), grad_like(n.inputs[1]), grad_like(n.inputs[2])};
    a.fused = {n.name};
    emit(a, n.repeat_of);
    for (int j = 0; j < 3; ++j)
      add_part(n.inputs[static_cast<size_t>(j)], a.outputs[static_cast<size_t>(j)]);
  }

  // A norm's backward, the gradient that reached its input by other paths (the residual
  // stream) folded in as dres. With residual_in the input is the sum h (written by the forward)
  // and its gradient goes to both addends.
  void norm(const Node& n) {
    const bool rin = n.residual_in;
    const int y = n.outputs.back();
    const int in = rin ? n.outputs[0] : n.inputs[0];
    const int dy = grad(y, n.repeat_of);
    const int dres = grad(in, n.repeat_of);
    int dx = dres;
    if (dy >= 0) {
      Node ng = n;
      ng.name = n.name + ".grad";
      ng.kind = OpKind::kNormGrad;
      ng.inputs = {in, dy};
      ng.ports = {"x", "dy"};
      if (dres >= 0) {
        ng.inputs.push_back(dres);
        ng.ports.push_back("dres");
      }
      ng.inputs.push_back(n.norm_weights[0]);
      ng.ports.push_back("gamma");
      dx = grad_like(in, ".grad_total");
      ng.outputs = {dx, grad_like(n.norm_weights[0])};
      ng.ports.insert(ng.ports.end(), {"dx", "dgamma"});
      if (n.norm_weights.size() > 1) {
        ng.outputs.push_back(grad_like(n.norm_weights[1]));
        ng.ports.push_back("dbeta");
      }
      ng.residual_in = false;
      const int64_t rows = val(in).shape[0];  // a rank's token shard with sequence parallelism
      ng.rows = n.kind == OpKind::kHeadNorm ? T_ * n.heads : rows;
      ng.fused = {n.name};
      emit(ng, n.repeat_of);
      for (size_t j = 0; j < n.norm_weights.size(); ++j) {
        int dw = ng.outputs[j + 1];
        if (rows != T_) {  // each rank's sum over its shard: all-reduced, as Megatron does
          const int r = grad_like(n.norm_weights[j], ".grad_reduced");
          emit(make(val(n.norm_weights[j]).name + ".grad_all_reduce", OpKind::kAllReduce, {dw}, {},
                    {r}),
               n.repeat_of);
          dw = r;
        }
        add_part(n.norm_weights[j], dw);
      }
    }
    if (dx < 0) return;
    if (rin) {
      add_part(n.inputs[0], dx);
      add_part(n.inputs[1], dx);
    } else {
      parts_[in] = {};  // dres is in dx now
      add_part(in, dx);
    }
  }

  // The gathered tokens feed column-parallel blocks, whose input gradients are partial sums
  // over the ranks: reduce-scattered, each rank gets its shard of the sum (Megatron's g's
  // backward with sequence parallelism), instead of an all-reduce.
  void all_gather(const Node& n) {
    auto it = parts_.find(n.outputs[0]);
    if (it == parts_.end() || it->second.empty()) return;
    std::vector<int> partial;
    for (const Part& p : it->second) {
      if (!p.partial)
        throw InternalError(
            fmt::format("backward: {} feeds a block whose input gradient is "
                        "not a partial sum over the ranks",
                        n.name));
      partial.push_back(p.value);
    }
    const int s = sum(partial, val(n.outputs[0]).name + ".partial", n.repeat_of);
    const int dx = grad_like(n.inputs[0]);
    emit(make(n.name + ".grad", OpKind::kReduceScatter, {s}, {}, {dx}), n.repeat_of);
    it->second = {};
    add_part(n.inputs[0], dx);
  }

  // act(gate) * up, the act read only by the mul: one GLU backward for both.
  void mul(const Node& n, size_t /*i*/) {
    const int dy = grad(n.outputs[0], n.repeat_of);
    if (dy < 0) return;
    const int p = g_.producer(n.inputs[0]);
    if (p >= 0) {
      const Node& an = g_.nodes[static_cast<size_t>(p)];
      const ops::Act glu = an.act == ops::Act::kSilu   ? ops::Act::kGluSilu
                           : an.act == ops::Act::kGelu ? ops::Act::kGluGelu
                                                       : ops::Act::kNone;
      if (an.kind == OpKind::kAct && glu != ops::Act::kNone &&
          g_.consumers(n.inputs[0]).size() == 1 && val(n.inputs[0]).kind != ValueKind::kOutput) {
        handled_.insert(static_cast<size_t>(p));
        const int gate = an.inputs[0], up = n.inputs[1];
        Node ag = make(n.name + ".grad", OpKind::kActGrad, {gate, up, dy}, {"gate", "up", "dy"},
                       {grad_like(gate), grad_like(up)});
        ag.ports.insert(ag.ports.end(), {"dgate", "dup"});
        ag.act = glu;
        ag.fused = {an.name, n.name};
        emit(ag, n.repeat_of);
        add_part(gate, ag.outputs[0]);
        add_part(up, ag.outputs[1]);
        return;
      }
    }
    for (int side = 0; side < 2; ++side) {
      const int a = n.inputs[static_cast<size_t>(side)],
                b = n.inputs[static_cast<size_t>(1 - side)];
      const int d = grad_like(a, fmt::format(".grad_mul{}", side));
      emit(make(n.name + fmt::format(".grad{}", side), OpKind::kMul, {dy, b}, {}, {d}),
           n.repeat_of);
      add_part(a, d);
    }
  }

  void act(const Node& n) {
    const int dy = grad(n.outputs[0], n.repeat_of);
    if (dy < 0) return;
    Node ag = make(n.name + ".grad", OpKind::kActGrad, {n.inputs[0], dy}, {"x", "dy"},
                   {grad_like(n.inputs[0])});
    ag.ports.push_back("dx");
    ag.act = n.act;
    ag.fused = {n.name};
    emit(ag, n.repeat_of);
    add_part(n.inputs[0], ag.outputs[0]);
  }

  // One node for the block's backward (lower_moe.cc's kernels): dx and a gradient per weight
  // (the router's, each of this rank's experts' gate, up and down). The experts' columns are
  // split over the tensor-parallel ranks, so dx is a partial sum, all-reduced like a
  // column-parallel linear's.
  void moe(const Node& n) {
    const int dy = need_grad(n.outputs[0], n);
    Node m = n;
    m.name = n.name + ".grad";
    m.kind = OpKind::kMoeGrad;
    m.inputs = {n.inputs[0], dy};
    m.ports = {"x", "dy"};
    for (size_t j = 1; j < n.outputs.size(); ++j) {
      m.inputs.push_back(n.outputs[j]);
      m.ports.push_back("saved");
    }
    const int dx = grad_like(n.inputs[0], ".grad_moe");
    m.outputs = {dx};
    m.ports.push_back("dx");
    std::vector<int> dws;
    for (int w : n.weights) {
      dws.push_back(grad_like(w));
      m.outputs.push_back(dws.back());
      m.ports.push_back("dw");
    }
    m.fused = {n.name};
    emit(m, n.repeat_of);
    for (size_t j = 0; j < dws.size(); ++j) add_part(n.weights[j], dws[j]);
    add_part(n.inputs[0], dx, g_.tp > 1);
  }

  void embedding(const Node& n) {
    const int dy = grad(n.outputs[0], n.repeat_of);
    if (dy < 0) return;
    for (size_t j = 0; j < n.weights.size(); ++j) {
      const int w = n.weights[j];
      Node eg = make(val(w).name + ".grad_scatter", OpKind::kEmbeddingGrad, {n.inputs[j], dy},
                     {"ids", "dy"}, {grad_like(w)});
      eg.ports.push_back("dtable");
      eg.weights = {w};
      eg.fused = {n.name};
      emit(eg, n.repeat_of);
      add_part(w, eg.outputs[0]);
    }
  }

  void optimizer() {
    for (auto [w, gv] : tg_.weight_grads) {
      const Value wv = val(w);
      Node n = make(wv.name + ".adamw", OpKind::kAdamW, {gv}, {"grad"}, {});
      n.state = {w};
      for (const char* s : {"master", "m", "v"})
        n.state.push_back(
            new_value(wv.name + "." + s, wv.shape, num::fp32(), ValueKind::kOptState));
      n.ports.insert(n.ports.end(), {"w", "master", "m", "v"});
      // The layer's optimizer steps fold into one row like its other kernels.
      n.repeat_of = wv.name.starts_with("layers.") ? 0 : -1;
      g_.add_node(std::move(n));
      ++tg_.optimizer_nodes;
    }
  }

  Graph& g_;
  int64_t T_;
  TrainGraph tg_;
  std::map<int, std::vector<Part>> parts_;
  std::set<size_t> handled_;
};

}  // namespace

TrainGraph add_training(Graph& g, const OptimizerParams& opt) { return Backward(g).run(opt); }

size_t loss_node(const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].kind == OpKind::kCrossEntropy) return i;
  return g.nodes.size();
}

std::vector<int> saved_activations(const Graph& g) {
  const size_t loss_at = loss_node(g);
  std::vector<char> forward(g.values.size(), 0), saved(g.values.size(), 0);
  for (size_t i = 0; i <= loss_at && i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].outputs) forward[static_cast<size_t>(v)] = 1;
  std::vector<int> out;
  for (size_t i = loss_at + 1; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs) {
      const auto u = static_cast<size_t>(v);
      if (forward[u] && !saved[u] && g.values[u].kind == ValueKind::kActivation) {
        saved[u] = 1;
        out.push_back(v);
      }
    }
  return out;
}

}  // namespace trnsim::graph
