// A sparse MoE block as the kernels that run it on one rank, forward and backward (lower.h
// lower_steps). Timing assumes balanced routing (docs/models.md): the values runner computes
// the real routing (value_runner_moe.cc) but the kernels' shapes do not depend on it.
#include <algorithm>
#include <optional>

#include "graph/lower.h"

namespace trnsim::graph {

namespace {

const Value& val(const Graph& g, int id) { return g.values[static_cast<size_t>(id)]; }

// One rank's share of a block's routing. Balanced routing over this rank's E / ep experts
// (expert parallelism; all E when ep is 1): the T x k token slots spread evenly, so with fewer
// slots than experts (a decode step) only T x k / ep of them get a token and the rest run
// nothing; te tokens each. Per token ceil(k / ep) local slots to combine (a slot with no local
// expert reads a zero row), the ranks' partial sums then all-reduced as with ep 1. A rank's
// token rows: T x k / ep. Across expert_dp replicas (build.h) the rank holds E / (ep x
// expert_dp) experts and its T x k / ep rows are the replicas' rows routed to them (the
// all-to-all's, timed by the caller), so only the experts per rank change.
struct Routing {
  int64_t T, E, k, H, I;  // tokens, experts, top-k, hidden, this rank's expert columns
  int64_t active, te, rows, slots;
  num::Format dt;
  std::optional<num::Format> expert_w;  // the experts' weights when quantized (build.h)

  Routing(const Graph& g, const Node& n, int x, int y)
      : T(g.batch * g.seq),
        E(n.experts),
        k(n.top_k),
        H(val(g, x).shape.back()),
        I(val(g, n.weights[1]).shape[1]),
        dt(val(g, y).dtype) {
    const int64_t ep = n.expert_ranks, local = E / (ep * n.expert_dp);
    rows = moe_rank_rows(g, n);
    active = std::min(local, rows);
    te = (rows + active - 1) / active;
    slots = (k + ep - 1) / ep;
    if (!n.scales.empty()) expert_w = val(g, n.weights[1]).dtype;
  }

  Kernel linear(int64_t tokens, int64_t in, int64_t out, ops::Act act, bool expert = false) const {
    Kernel k2;
    if (expert && expert_w) {
      k2.linear.weight_dtype = expert_w;
      k2.linear.weight_scale = true;
    }
    k2.kind = KernelKind::kLinear;
    k2.linear.tokens = tokens;
    k2.linear.in = in;
    k2.linear.out = out;
    k2.linear.dtype = dt;
    k2.linear.act = act;
    k2.linear.packed_weights = true;
    return k2;
  }
  // `tokens` rows of [.., H] picked from a table of `table` rows.
  Kernel gather(int64_t tokens, int64_t table) const {
    Kernel k2;
    k2.kind = KernelKind::kEmbedding;
    k2.embedding = {.tokens = tokens, .vocab = table, .hidden = H, .positions = 0, .dtype = dt};
    return k2;
  }
  Kernel eltwise(int64_t tokens, int64_t features, ops::Elementwise op) const {
    Kernel k2;
    k2.kind = KernelKind::kElementwise;
    k2.elementwise = {
        .tokens = tokens, .features = features, .dtype = dt, .op = op, .act = ops::Act::kNone};
    return k2;
  }
  Kernel grad_input(int64_t tokens, int64_t in, std::vector<int64_t> splits) const {
    Kernel k2;
    k2.kind = KernelKind::kLinearGradInput;
    k2.grad_input = {.tokens = tokens, .in = in, .splits = std::move(splits), .dtype = dt};
    return k2;
  }
  Kernel grad_weight(int64_t tokens, int64_t in, std::vector<int64_t> splits) const {
    Kernel k2;
    k2.kind = KernelKind::kLinearGradWeight;
    k2.grad_weight = {.tokens = tokens, .in = in, .splits = std::move(splits), .dtype = dt};
    return k2;
  }
};

}  // namespace

int64_t moe_rank_rows(const Graph& g, const Node& n) {
  return (g.batch * g.seq * n.top_k + n.expert_ranks - 1) / n.expert_ranks;
}

std::vector<Step> moe_steps(const Graph& g, const Node& n) {
  const Routing r(g, n, n.inputs[0], n.outputs[0]);
  std::vector<Step> steps;
  steps.push_back({r.linear(r.T, r.H, r.E, ops::Act::kNone), 1, "router"});
  Kernel top;
  top.kind = KernelKind::kRouter;
  top.router = {
      .tokens = r.T, .experts = r.E, .top_k = r.k, .normalize = n.norm_top_k, .dtype = r.dt};
  steps.push_back({top, 1, "top-k"});
  steps.push_back({r.gather(r.rows, r.T), 1, "dispatch"});
  steps.push_back({r.linear(r.te, r.H, r.I, n.act, true), r.active, "experts.gate_up"});
  steps.push_back({r.linear(r.te, r.I, r.H, ops::Act::kNone, true), r.active, "experts.down"});
  steps.push_back({r.gather(r.T * r.slots, r.rows), 1, "combine.gather"});
  steps.push_back({r.eltwise(r.T * r.slots, r.H, ops::Elementwise::kMul), 1, "combine.scale"});
  if (r.slots > 1)
    steps.push_back({r.eltwise(r.T, r.H, ops::Elementwise::kAdd), r.slots - 1, "combine.sum"});
  return steps;
}

// The forward's steps in reverse, each as its backward (Megatron's MoE layer, and NxD's, run
// the same chain): the combine's gradient to each routed row (dy gathered back to the rows,
// times its routing weight) and to each routing weight (the row's dot product with the
// expert's output); per expert the down projection's and the GLU's and the gate / up
// projections' backward over its te tokens; the dispatch's backward, a scatter-add of the
// rows' dx into their tokens; the router's softmax / top-k backward over [T, E] and its
// linear's backward; the two dx added.
std::vector<Step> moe_grad_steps(const Graph& g, const Node& n) {
  const Routing r(g, n, n.inputs[0], n.inputs[1]);
  const auto mul = ops::Elementwise::kMul;
  std::vector<Step> steps;
  steps.push_back({r.gather(r.rows, r.T), 1, "combine.grad_gather"});
  steps.push_back({r.eltwise(r.rows, r.H, mul), 1, "combine.grad_scale"});
  steps.push_back({r.eltwise(r.rows, r.H, mul), 1, "combine.grad_weights"});
  steps.push_back({r.grad_input(r.te, r.I, {r.H}), r.active, "experts.down.grad_input"});
  steps.push_back({r.grad_weight(r.te, r.I, {r.H}), r.active, "experts.down.grad_weight"});
  Kernel glu;
  glu.kind = KernelKind::kActGrad;
  glu.act_grad = {.tokens = r.te, .features = r.I, .dtype = r.dt, .act = n.act};
  steps.push_back({glu, r.active, "experts.act_grad"});
  steps.push_back({r.grad_input(r.te, r.H, {r.I, r.I}), r.active, "experts.gate_up.grad_input"});
  steps.push_back({r.grad_weight(r.te, r.H, {r.I, r.I}), r.active, "experts.gate_up.grad_weight"});
  Kernel scatter;
  scatter.kind = KernelKind::kEmbeddingGrad;
  scatter.embedding_grad = {.tokens = r.rows, .vocab = r.T, .hidden = r.H, .dtype = r.dt};
  steps.push_back({scatter, 1, "dispatch.grad"});
  steps.push_back({r.eltwise(r.T, r.E, mul), 2, "router.softmax_grad"});
  steps.push_back({r.grad_input(r.T, r.H, {r.E}), 1, "router.grad_input"});
  steps.push_back({r.grad_weight(r.T, r.H, {r.E}), 1, "router.grad_weight"});
  steps.push_back({r.eltwise(r.T, r.H, ops::Elementwise::kAdd), 1, "dx_sum"});
  return steps;
}

}  // namespace trnsim::graph
