// The functional side of a model run (value_runner.h): weights and inputs on the host, each
// kernel's program run by the functional runner on the tensors its node reads, the results
// kept for the nodes after it.
#include "graph/value_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/counter_rng.h"
#include "base/error.h"
#include "core/exec/functional_runner.h"
#include "graph/host_columns.h"
#include "graph/rope.h"
#include "numerics/convert.h"

namespace trnsim::graph {

namespace {

const Value& val(const Graph& g, int id) { return g.values[static_cast<size_t>(id)]; }

float round_to(const num::Format& f, double x) {
  return static_cast<float>(num::decode(f, num::encode(f, x, num::Rounding::kNearestEven, 0, {})));
}

// Deterministic weights when the caller gives none: linears uniform in +-1/sqrt(in) (torch's
// nn.Linear bound), embeddings in +-1, norm scales 1 +- 0.1, shifts and biases +- 0.1;
// rounded to the value's dtype.
std::vector<float> random_weight(const Value& w, uint64_t seed, uint64_t stream) {
  std::vector<float> out(static_cast<size_t>(w.elements()));
  const bool norm_scale = w.name.ends_with("norm.weight") || w.name.ends_with("LayerNorm.weight");
  double lo = -1, hi = 1;
  if (w.shape.size() == 2 && !w.name.starts_with("embed")) {
    hi = 1.0 / std::sqrt(static_cast<double>(w.shape[0]));
    lo = -hi;
  } else if (norm_scale) {
    lo = 0.9, hi = 1.1;
  } else if (w.shape.size() == 1) {
    lo = -0.1, hi = 0.1;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const double u = random_u32(seed, stream, i) / 4294967296.0;
    out[i] = round_to(w.dtype, lo + (hi - lo) * u);
  }
  return out;
}

// Per-channel symmetric quantization (NxD's quantize_pytorch_model_per_channel_symmetric):
// each column n of w [K, N] becomes codes of `f` times scale[n] = max_k |w[k, n]| / the
// format's largest value (127 for int8), the codes rounded to nearest even (int8: clamped to
// +-127). `w` is replaced by the codes; returns the scales.
std::vector<float> quantize_per_channel(const num::Format& f, const std::vector<int64_t>& shape,
                                        std::vector<float>& w) {
  const int64_t K = shape[0], N = shape[1];
  const bool int8 = f.kind == num::Kind::kInt;
  const double qmax = int8 ? 127.0 : f.max_finite();
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    double amax = 0;
    for (int64_t k = 0; k < K; ++k)
      amax = std::max(amax, std::fabs(double{w[static_cast<size_t>(k * N + n)]}));
    const auto sc = static_cast<float>(amax > 0 ? amax / qmax : 1.0);
    scale[static_cast<size_t>(n)] = sc;
    for (int64_t k = 0; k < K; ++k) {
      float& x = w[static_cast<size_t>(k * N + n)];
      const double q = double{x} / sc;
      x = int8 ? static_cast<float>(std::clamp(std::nearbyint(q), -127.0, 127.0)) : round_to(f, q);
    }
  }
  return scale;
}

}  // namespace

ValueRunner::ValueRunner(const arch::ChipSpec& chip, const Graph& g, KernelCache& cache,
                         const ModelRunOptions& o, const TensorMap* weights,
                         const TensorMap* inputs, ModelResult& res)
    : chip_(chip), g_(g), cache_(cache), res_(res) {
  // Quantized weights (build.h WeightQuant): given or drawn in bf16 as a checkpoint holds
  // them, then quantized here as NxD quantizes a checkpoint; their scales are computed.
  std::map<size_t, size_t> scale_of;  // weight -> its scale value
  for (const Node& nd : g.nodes)
    for (size_t i = 0; i < nd.scales.size(); ++i)
      if (nd.scales[i] >= 0)
        scale_of[static_cast<size_t>(nd.weights[i])] = static_cast<size_t>(nd.scales[i]);
  std::set<size_t> scales;
  for (const auto& [w, sc] : scale_of) scales.insert(sc);
  for (size_t v = 0; v < g.values.size(); ++v) {
    const Value& x = g.values[v];
    const size_t n = static_cast<size_t>(x.elements());
    if (scales.contains(v)) continue;
    if (x.kind == ValueKind::kWeight) {
      if (weights != nullptr) {
        auto it = weights->find(x.name);
        if (it == weights->end()) throw InputError("weights", x.name, "missing");
        if (it->second.size() != n)
          throw InputError("weights", x.name,
                           fmt::format("{} values; the model needs {} ({})", it->second.size(), n,
                                       fmt::join(x.shape, " x ")));
        host_[v] = it->second;
      } else {
        Value drawn = x;
        if (scale_of.contains(v)) drawn.dtype = num::bf16();
        host_[v] = random_weight(drawn, o.seed, v);
        res_.weights[x.name] = host_[v];
      }
      if (auto sc = scale_of.find(v); sc != scale_of.end()) {
        host_[sc->second] = quantize_per_channel(x.dtype, x.shape, host_[v]);
        res_.weights[g.values[sc->second].name] = host_[sc->second];
      }
    } else if (x.kind == ValueKind::kInput) {
      if (inputs != nullptr && inputs->contains(x.name)) {
        const auto& in = inputs->at(x.name);
        if (in.size() != n)
          throw InputError("inputs", x.name,
                           fmt::format("{} values; the model needs {}", in.size(), n));
        host_[v] = in;
      } else if (x.name == "position_ids") {
        host_[v].resize(n);
        for (size_t i = 0; i < n; ++i)
          host_[v][i] = static_cast<float>(static_cast<int64_t>(i) % g.seq);
      } else if (x.dtype.kind == num::Kind::kFloat) {  // activations given by the caller
        host_[v].resize(n);
        for (size_t i = 0; i < n; ++i)
          host_[v][i] =
              round_to(x.dtype, random_u32(o.seed, (1u << 30) + v, i) / 2147483648.0 - 1.0);
      } else {  // token ids for the embedding that reads them
        // Ids of the embedding that reads them, labels of the loss: within its vocabulary.
        int64_t vocab = 1;
        for (const Node& nd : g.nodes)
          if (nd.kind == OpKind::kEmbedding && !nd.inputs.empty() &&
              nd.inputs[0] == static_cast<int>(v))
            vocab = val(g, nd.weights[0]).shape[0];
          else if (nd.kind == OpKind::kCrossEntropy && nd.inputs[1] == static_cast<int>(v))
            vocab = val(g, nd.inputs[0]).shape.back();
        host_[v].resize(n);
        for (size_t i = 0; i < n; ++i)
          host_[v][i] =
              static_cast<float>(random_u32(o.seed, 1u << 30, i) % static_cast<uint64_t>(vocab));
        res_.weights[x.name] = host_[v];
      }
    }
  }
}

void ValueRunner::run(const Node& n, const Kernel& k0) {
  if (is_training_kernel(k0.kind)) return run_training(n, k0);
  Kernel k = k0;
  if (k.kind == KernelKind::kLinear) k.linear.tiling = cache_.tiling(k);
  const isa::Program prog = build_program(chip_, k);
  core::FunctionalRunner runner(chip_, prog);
  auto put = [&](const char* name, const std::vector<float>& v) {
    runner.write_tensor_f32(name, v);
  };
  auto in = [&](size_t i) -> const std::vector<float>& {
    return host_.at(static_cast<size_t>(n.inputs[i]));
  };
  auto w = [&](int id) -> const std::vector<float>& { return host_.at(static_cast<size_t>(id)); };
  switch (k.kind) {
    case KernelKind::kLinear: {
      put("x", in(0));
      if (n.residual_in) put("delta", in(1));
      if (!n.norm_weights.empty()) put("gamma", w(n.norm_weights[0]));
      if (n.norm_weights.size() > 1) put("beta", w(n.norm_weights[1]));
      // The kernel reads its weights in the packed layout (lower.cc): laid out here, as the
      // compiler lays out a compiled model's weights once.
      auto put_w = [&](const char* name, const std::vector<float>& v) {
        put(name, k.linear.packed_weights ? ops::pack_linear_weights(chip_, k.linear, v) : v);
      };
      if (ops::is_glu(n.act)) {
        put_w("w_gate", w(n.weights[0]));
        put_w("w_up", w(n.weights[1]));
        if (!n.scales.empty()) {
          put("w_gate_scale", w(n.scales[0]));
          put("w_up_scale", w(n.scales[1]));
        }
        if (!n.biases.empty()) {
          put("b_gate", w(n.biases[0]));
          put("b_up", w(n.biases[1]));
        }
      } else {
        std::vector<const std::vector<float>*> parts, bparts;
        std::vector<int64_t> widths;
        for (int id : n.weights) {
          parts.push_back(&w(id));
          widths.push_back(val(g_, id).shape[1]);
        }
        put_w("w", parts.size() == 1 ? *parts[0] : concat_columns(parts, widths, k.linear.in));
        if (!n.biases.empty()) {
          for (int id : n.biases) bparts.push_back(&w(id));
          put("b", bparts.size() == 1 ? *bparts[0] : concat_columns(bparts, widths, 1));
        }
        if (!n.scales.empty()) {
          std::vector<const std::vector<float>*> sparts;
          for (int id : n.scales) sparts.push_back(&w(id));
          put("w_scale", sparts.size() == 1 ? *sparts[0] : concat_columns(sparts, widths, 1));
        }
      }
      if (n.residual_out) put("r", in(n.inputs.size() - 1));
      break;
    }
    case KernelKind::kAttention: {
      put("q", in(0));
      put("k", in(1));
      put("v", in(2));
      if (n.rope) {
        std::vector<float> c, s;
        rope_tables(n, c, s);
        put("cos", c);
        put("sin", s);
      }
      if (n.qk_norm) {
        put("q_gamma", w(n.norm_weights[0]));
        put("k_gamma", w(n.norm_weights[1]));
      }
      break;
    }
    case KernelKind::kNorm:
      put("x", in(0));
      if (n.residual_in) put("delta", in(1));
      put("gamma", w(n.norm_weights[0]));
      if (n.norm_weights.size() > 1) put("beta", w(n.norm_weights[1]));
      break;
    case KernelKind::kEmbedding:
      put("ids", in(0));
      put("table", w(n.weights[0]));
      if (n.weights.size() > 1) {
        put("pos_ids", in(1));
        put("pos_table", w(n.weights[1]));
      }
      break;
    case KernelKind::kElementwise:
      put("a", in(0));
      if (n.inputs.size() > 1) put("b", in(1));
      break;
    default:
      throw InternalError(
          "no values for an all-reduce (refused before the run); a MoE block runs as run_moe");
  }
  run_checked(runner, n, k);
  // Outputs.
  size_t next = 0;
  if ((k.kind == KernelKind::kLinear || k.kind == KernelKind::kNorm) && n.residual_in &&
      n.outputs.size() > 1)
    host_[static_cast<size_t>(n.outputs[next++])] = runner.read_tensor_f32("h");
  const char* yname = k.kind == KernelKind::kAttention ? "out" : "y";
  std::vector<float> y = runner.read_tensor_f32(yname);
  if (k.kind == KernelKind::kAttention && k.attention.save_lse)  // a training forward
    host_[static_cast<size_t>(n.outputs[1])] =
        runner.read_tensor_f32(k.attention.eager ? "probs" : "lse");
  const size_t outs = k.kind == KernelKind::kAttention ? 1 : n.outputs.size() - next;
  if (outs == 1) {
    host_[static_cast<size_t>(n.outputs[next])] = std::move(y);
  } else {  // a horizontally fused linear: columns back to each output
    auto parts = split_columns(y, n.splits, k.linear.tokens);
    for (size_t o = 0; o < outs; ++o)
      host_[static_cast<size_t>(n.outputs[next + o])] = std::move(parts[o]);
  }
}

void ValueRunner::run_checked(core::FunctionalRunner& runner, const Node& n, const Kernel& k) {
  runner.run();
  if (!runner.faults().empty())
    throw InputError(n.name, std::string(k.kind_name()),
                     fmt::format("the kernel faulted: {}: {}", runner.faults()[0].instruction,
                                 runner.faults()[0].message));
}

std::map<std::string, std::vector<float>> ValueRunner::exec(const Node& n, const Kernel& k,
                                                            const Bindings& in,
                                                            const std::vector<const char*>& out) {
  const isa::Program prog = build_program(chip_, k);
  core::FunctionalRunner runner(chip_, prog);
  for (const auto& [name, v] : in) runner.write_tensor_f32(name, *v);
  run_checked(runner, n, k);
  std::map<std::string, std::vector<float>> res;
  for (const char* name : out) res[name] = runner.read_tensor_f32(name);
  return res;
}

void ValueRunner::finish() {
  for (size_t v = 0; v < g_.values.size(); ++v)
    if (g_.values[v].kind == ValueKind::kOutput) res_.outputs[g_.values[v].name] = host_[v];
  for (const Node& n : g_.nodes)
    if (n.kind == OpKind::kAdamW) {
      const std::string& w = val(g_, n.state[0]).name;
      res_.gradients[w] = host_.at(static_cast<size_t>(n.inputs[0]));
      res_.updated_weights[w] = host_.at(static_cast<size_t>(n.state[0]));
    }
}

void ValueRunner::rope_tables(const Node& n, std::vector<float>& c, std::vector<float>& s) const {
  const int64_t S = n.seq, d = n.head_dim, half = d / 2;
  c.resize(static_cast<size_t>(S * d));
  s.resize(c.size());
  const std::vector<double> inv = rope_inv_freq(n.rope_theta, d, n.rope_scaling);
  for (int64_t p = 0; p < S; ++p)
    for (int64_t i = 0; i < half; ++i) {
      // transformers' rotary embedding: fp32 position x fp32 frequency, cos and sin of that.
      const double a = static_cast<double>(static_cast<float>(p) *
                                           static_cast<float>(inv[static_cast<size_t>(i)]));
      const auto ci = static_cast<float>(std::cos(a)), si = static_cast<float>(std::sin(a));
      c[static_cast<size_t>(p * d + i)] = c[static_cast<size_t>(p * d + i + half)] = ci;
      s[static_cast<size_t>(p * d + i)] = s[static_cast<size_t>(p * d + i + half)] = si;
    }
}

}  // namespace trnsim::graph
