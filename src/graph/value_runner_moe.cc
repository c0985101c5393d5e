// Values of a sparse MoE block (value_runner.h run_moe). Timing runs the block under balanced
// routing (lower.cc lower_steps); values need the routing the router actually computes, so the
// same kernels run here with each expert's real token count: the router linear and top-k, per
// expert the gather of its tokens' rows, its GLU and down projection, then the gather of each
// token's k expert rows (slot-major), the multiply by the routing weights (bf16, as
// transformers casts them to the hidden dtype) and the k - 1 adds.
#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "graph/value_runner.h"

namespace trnsim::graph {

namespace {

Kernel step_of(const std::vector<Step>& steps, std::string_view part) {
  for (const Step& s : steps)
    if (s.part == part) return s.kernel;
  throw InternalError(fmt::format("lower_steps of a moe node has no '{}' kernel", part));
}

}  // namespace

void ValueRunner::run_moe(const Node& n) {
  const std::vector<Step> steps = lower_steps(g_, n);
  const std::vector<float>& x = host_.at(static_cast<size_t>(n.inputs[0]));
  const int64_t T = g_.batch * g_.seq, E = n.experts, k = n.top_k;
  const int64_t H = g_.values[static_cast<size_t>(n.inputs[0])].shape.back();
  auto weight = [&](size_t i) -> const std::vector<float>& {
    return host_.at(static_cast<size_t>(n.weights[i]));
  };
  auto linear = [&](std::string_view part, int64_t tokens) {
    Kernel l = step_of(steps, part);
    l.linear.tokens = tokens;
    l.linear.tiling = cache_.tiling(l);
    return l;
  };
  auto packed = [&](const Kernel& l, const std::vector<float>& w) {
    return l.linear.packed_weights ? ops::pack_linear_weights(chip_, l.linear, w) : w;
  };

  const Kernel rl = linear("router", T);
  const std::vector<float> rw = packed(rl, weight(0));
  const std::vector<float> logits = exec(n, rl, {{"x", &x}, {"w", &rw}}, {"y"}).at("y");
  auto routed = exec(n, step_of(steps, "top-k"), {{"logits", &logits}}, {"weights", "experts"});
  const std::vector<float>& probs = routed.at("weights");
  const std::vector<float>& chosen = routed.at("experts");

  // Each expert's tokens in token order; row_of[t * k + j]: the row of token t's j-th expert's
  // output in the experts' outputs stacked in expert order.
  std::vector<std::vector<int64_t>> tokens_of(static_cast<size_t>(E));
  std::vector<std::vector<size_t>> slots_of(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t j = 0; j < k; ++j) {
      const auto e = static_cast<int64_t>(chosen[static_cast<size_t>(t * k + j)]);
      if (e < 0 || e >= E)
        throw InternalError(fmt::format("{}: the router chose expert {} of {}", n.name, e, E));
      tokens_of[static_cast<size_t>(e)].push_back(t);
      slots_of[static_cast<size_t>(e)].push_back(static_cast<size_t>(t * k + j));
    }
  std::vector<float> stacked(static_cast<size_t>(T * k * H));
  std::vector<float> row_of(static_cast<size_t>(T * k));
  int64_t row = 0;
  for (int64_t e = 0; e < E; ++e) {
    const auto& toks = tokens_of[static_cast<size_t>(e)];
    const auto te = static_cast<int64_t>(toks.size());
    if (te == 0) continue;
    Kernel d = step_of(steps, "dispatch");
    d.embedding.tokens = te;
    std::vector<float> ids(toks.begin(), toks.end());
    const std::vector<float> xe = exec(n, d, {{"ids", &ids}, {"table", &x}}, {"y"}).at("y");
    const Kernel gu = linear("experts.gate_up", te), dn = linear("experts.down", te);
    const auto e3 = static_cast<size_t>(1 + 3 * e);
    const std::vector<float> wg = packed(gu, weight(e3)), wu = packed(gu, weight(e3 + 1));
    const std::vector<float> wd = packed(dn, weight(e3 + 2));
    Bindings gu_in{{"x", &xe}, {"w_gate", &wg}, {"w_up", &wu}};
    std::vector<float> he;
    if (n.scales.empty()) {
      he = exec(n, gu, gu_in, {"y"}).at("y");
    } else {  // quantized experts: each weight's per-column scales (build.h WeightQuant)
      auto scale = [&](size_t i) { return &host_.at(static_cast<size_t>(n.scales[i])); };
      gu_in.push_back({"w_gate_scale", scale(e3)});
      gu_in.push_back({"w_up_scale", scale(e3 + 1)});
      he = exec(n, gu, gu_in, {"y"}).at("y");
    }
    Bindings dn_in{{"x", &he}, {"w", &wd}};
    if (!n.scales.empty())
      dn_in.push_back({"w_scale", &host_.at(static_cast<size_t>(n.scales[e3 + 2]))});
    const std::vector<float> ye = exec(n, dn, dn_in, {"y"}).at("y");
    std::copy(ye.begin(), ye.end(), stacked.begin() + row * H);
    for (size_t i = 0; i < toks.size(); ++i)
      row_of[slots_of[static_cast<size_t>(e)][i]] =
          static_cast<float>(row + static_cast<int64_t>(i));
    row += te;
  }

  // Combine: slot j of every token is rows [j T, (j + 1) T) of the gathered tensor.
  std::vector<float> ids(static_cast<size_t>(T * k)), scale(static_cast<size_t>(T * k * H));
  for (int64_t j = 0; j < k; ++j)
    for (int64_t t = 0; t < T; ++t) {
      const auto src = static_cast<size_t>(t * k + j), dst = static_cast<size_t>(j * T + t);
      ids[dst] = row_of[src];
      std::fill_n(scale.begin() + static_cast<int64_t>(dst) * H, H, probs[src]);
    }
  const std::vector<float> gathered =
      exec(n, step_of(steps, "combine.gather"), {{"ids", &ids}, {"table", &stacked}}, {"y"})
          .at("y");
  std::vector<float> scaled =
      exec(n, step_of(steps, "combine.scale"), {{"a", &gathered}, {"b", &scale}}, {"y"}).at("y");
  std::vector<float> sum(scaled.begin(), scaled.begin() + T * H);
  for (int64_t j = 1; j < k; ++j) {
    const std::vector<float> part(scaled.begin() + j * T * H, scaled.begin() + (j + 1) * T * H);
    sum = exec(n, step_of(steps, "combine.sum"), {{"a", &sum}, {"b", &part}}, {"y"}).at("y");
  }
  host_[static_cast<size_t>(n.outputs[0])] = std::move(sum);
}

}  // namespace trnsim::graph
