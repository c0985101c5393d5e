// Lowering of the training nodes (backward.h) to the training kernels of the ops library
// (ops/train_ops.h), and their keys, descriptions and useful FLOPs.
#include <fmt/format.h>

#include "base/error.h"
#include "graph/lower.h"

namespace trnsim::graph {

namespace {

const Value& val(const Graph& g, int id) { return g.values[static_cast<size_t>(id)]; }

// The values a training node binds to port `port`, in order.
std::vector<int> bound(const Node& n, std::string_view port) {
  std::vector<int> out;
  const size_t ins = n.inputs.size();
  for (size_t i = 0; i < n.ports.size(); ++i)
    if (n.ports[i] == port) out.push_back(i < ins ? n.inputs[i] : n.outputs[i - ins]);
  return out;
}

std::vector<int64_t> dy_splits(const Graph& g, const Node& n) {
  std::vector<int64_t> s;
  for (size_t j = 0;; ++j) {
    const auto v = bound(n, fmt::format("dy{}", j));
    if (v.empty()) break;
    s.push_back(val(g, v[0]).shape.back());
  }
  return s;
}

std::string splits_text(const std::vector<int64_t>& s) {
  return fmt::format("{}", fmt::join(s, "+"));
}

}  // namespace

Kernel lower_training(const Graph& g, const Node& n) {
  Kernel k;
  const int64_t T = g.batch * g.seq;
  const auto first = [&](std::string_view port) {
    const auto v = bound(n, port);
    if (v.empty()) throw InternalError(fmt::format("lower: {} binds no {}", n.name, port));
    return v[0];
  };
  switch (n.kind) {
    case OpKind::kLinearGradInput:
      k.kind = KernelKind::kLinearGradInput;
      k.grad_input = {.tokens = val(g, first("dx")).shape.front(),
                      .in = val(g, first("dx")).shape.back(),
                      .splits = dy_splits(g, n),
                      .dtype = val(g, first("dx")).dtype,
                      .accumulate = false};
      return k;
    case OpKind::kLinearGradWeight:
      k.kind = KernelKind::kLinearGradWeight;
      k.grad_weight = {.tokens = val(g, first("x")).shape.front(),
                       .in = val(g, first("x")).shape.back(),
                       .splits = dy_splits(g, n),
                       .dtype = val(g, first("x")).dtype,
                       .bias = !bound(n, "db").empty()};
      return k;
    case OpKind::kAttentionGrad: {
      k.kind = KernelKind::kAttentionGrad;
      auto& s = k.attention;
      s.batch = n.batch;
      s.seq = n.seq;
      s.q_heads = n.heads;
      s.kv_heads = n.kv_heads;
      s.head_dim = n.head_dim;
      s.dtype = val(g, first("q")).dtype;
      s.causal = n.causal;
      s.rope = n.rope;
      s.eager = n.eager;
      return k;
    }
    case OpKind::kNormGrad: {
      k.kind = KernelKind::kNormGrad;
      const Value& x = val(g, first("x"));
      const int64_t rows = n.rows > 0 ? n.rows : x.shape.front();  // a token shard with SP
      k.norm_grad = {.tokens = rows,
                     .features = x.elements() / rows,
                     .dtype = x.dtype,
                     .norm = n.norm == ops::Norm::kNone ? ops::Norm::kRms : n.norm,
                     .eps = n.eps,
                     .residual = !bound(n, "dres").empty()};
      return k;
    }
    case OpKind::kActGrad: {
      k.kind = KernelKind::kActGrad;
      const Value& dy = val(g, first("dy"));
      k.act_grad = {
          .tokens = dy.shape.front(), .features = dy.shape.back(), .dtype = dy.dtype, .act = n.act};
      return k;
    }
    case OpKind::kEmbeddingGrad: {
      k.kind = KernelKind::kEmbeddingGrad;
      const Value& table = val(g, n.weights[0]);
      k.embedding_grad = {.tokens = val(g, first("dy")).shape.front(),
                          .vocab = table.shape[0],
                          .hidden = table.shape[1],
                          .dtype = val(g, first("dy")).dtype};
      return k;
    }
    case OpKind::kCrossEntropy: {
      k.kind = KernelKind::kCrossEntropy;
      const Value& l = val(g, first("logits"));
      k.cross_entropy = {
          .tokens = T, .vocab = l.shape.back(), .dtype = l.dtype, .scale = n.loss_scale};
      return k;
    }
    case OpKind::kAdamW: {
      k.kind = KernelKind::kAdamW;
      const Value& w = val(g, n.state[0]);
      const OptimizerParams& o = g.optimizer;
      k.adamw = {.elements = w.elements(),
                 .dtype = w.dtype,
                 .lr = o.lr,
                 .beta1 = o.beta1,
                 .beta2 = o.beta2,
                 .eps = o.eps,
                 .weight_decay = o.weight_decay,
                 .step = o.step,
                 .stochastic_rounding = o.stochastic_rounding,
                 .seed = o.seed};
      return k;
    }
    default:
      break;
  }
  throw InternalError(fmt::format("lower_training: {} is not a training node", n.name));
}

std::string training_key(const Kernel& k) {
  switch (k.kind) {
    case KernelKind::kLinearGradInput: {
      const auto& s = k.grad_input;
      return fmt::format("grad_input T{} K{} N{} {} acc={}", s.tokens, s.in, splits_text(s.splits),
                         s.dtype.name(), s.accumulate);
    }
    case KernelKind::kLinearGradWeight: {
      const auto& s = k.grad_weight;
      return fmt::format("grad_weight T{} K{} N{} {} bias={}", s.tokens, s.in,
                         splits_text(s.splits), s.dtype.name(), s.bias);
    }
    case KernelKind::kAttentionGrad: {
      const auto& s = k.attention;
      return fmt::format("attn_grad B{} S{} Hq{} Hkv{} d{} {} causal={} rope={}{}", s.batch, s.seq,
                         s.q_heads, s.kv_heads, s.head_dim, s.dtype.name(), s.causal, s.rope,
                         s.eager ? " eager" : "");
    }
    case KernelKind::kNormGrad: {
      const auto& s = k.norm_grad;
      return fmt::format("norm_grad T{} F{} {} {} eps={} res={}", s.tokens, s.features,
                         s.dtype.name(), ops::name(s.norm), s.eps, s.residual);
    }
    case KernelKind::kActGrad: {
      const auto& s = k.act_grad;
      return fmt::format("act_grad T{} F{} {} {}", s.tokens, s.features, s.dtype.name(),
                         ops::name(s.act));
    }
    case KernelKind::kEmbeddingGrad: {
      const auto& s = k.embedding_grad;
      return fmt::format("embed_grad T{} V{} H{} {}", s.tokens, s.vocab, s.hidden, s.dtype.name());
    }
    case KernelKind::kCrossEntropy: {
      const auto& s = k.cross_entropy;
      return fmt::format("loss T{} V{} {} scale={}", s.tokens, s.vocab, s.dtype.name(), s.scale);
    }
    case KernelKind::kAdamW: {
      const auto& s = k.adamw;
      return fmt::format("adamw n{} {} lr={} b={},{} eps={} wd={} step={} sr={} seed={}",
                         s.elements, s.dtype.name(), s.lr, s.beta1, s.beta2, s.eps, s.weight_decay,
                         s.step, s.stochastic_rounding, s.seed);
    }
    default:
      break;
  }
  throw InternalError("training_key: not a training kernel");
}

std::string training_describe(const Kernel& k) {
  switch (k.kind) {
    case KernelKind::kLinearGradInput: {
      const auto& s = k.grad_input;
      return fmt::format("dy {}x{} @ w^T -> {}x{}", s.tokens, splits_text(s.splits), s.tokens,
                         s.in);
    }
    case KernelKind::kLinearGradWeight: {
      const auto& s = k.grad_weight;
      return fmt::format("x^T {}x{} @ dy {}x{}{}", s.in, s.tokens, s.tokens, splits_text(s.splits),
                         s.bias ? " + db" : "");
    }
    case KernelKind::kAttentionGrad: {
      const auto& s = k.attention;
      return fmt::format("{}x{} tokens, {}q/{}kv heads x {}{}{}{}", s.batch, s.seq, s.q_heads,
                         s.kv_heads, s.head_dim, s.causal ? " causal" : "", s.rope ? " rope" : "",
                         s.eager ? " eager" : "");
    }
    case KernelKind::kNormGrad: {
      const auto& s = k.norm_grad;
      return fmt::format("{} {}x{}{}", ops::name(s.norm), s.tokens, s.features,
                         s.residual ? " + residual" : "");
    }
    case KernelKind::kActGrad:
      return fmt::format("{} {}x{}", ops::name(k.act_grad.act), k.act_grad.tokens,
                         k.act_grad.features);
    case KernelKind::kEmbeddingGrad:
      return fmt::format("{} rows into {}x{}", k.embedding_grad.tokens, k.embedding_grad.vocab,
                         k.embedding_grad.hidden);
    case KernelKind::kCrossEntropy:
      return fmt::format("cross-entropy {}x{}", k.cross_entropy.tokens, k.cross_entropy.vocab);
    case KernelKind::kAdamW:
      return fmt::format("{} elements", k.adamw.elements);
    default:
      break;
  }
  throw InternalError("training_describe: not a training kernel");
}

double training_flops(const Kernel& k) {
  auto total = [](const std::vector<int64_t>& s) {
    double n = 0;
    for (int64_t x : s) n += static_cast<double>(x);
    return n;
  };
  switch (k.kind) {
    case KernelKind::kLinearGradInput:
      return 2.0 * static_cast<double>(k.grad_input.tokens) * static_cast<double>(k.grad_input.in) *
             total(k.grad_input.splits);
    case KernelKind::kLinearGradWeight:
      return 2.0 * static_cast<double>(k.grad_weight.tokens) *
             static_cast<double>(k.grad_weight.in) * total(k.grad_weight.splits);
    case KernelKind::kAttentionGrad: {
      // Useful work: dv, dp, dq, dk (4 matmuls, twice the forward's); the recomputed scores
      // are not counted, as MFU conventions count them.
      Kernel f;
      f.kind = KernelKind::kAttention;
      f.attention = k.attention;
      return 2.0 * f.flops();
    }
    default:
      return 0;
  }
}

isa::Program build_training_program(const arch::ChipSpec& chip, const Kernel& k) {
  switch (k.kind) {
    case KernelKind::kLinearGradInput:
      return ops::linear_grad_input(chip, k.grad_input);
    case KernelKind::kLinearGradWeight:
      return ops::linear_grad_weight(chip, k.grad_weight);
    case KernelKind::kAttentionGrad:
      return ops::attention_backward(chip, k.attention);
    case KernelKind::kNormGrad:
      return ops::norm_backward(chip, k.norm_grad);
    case KernelKind::kActGrad:
      return ops::act_backward(chip, k.act_grad);
    case KernelKind::kEmbeddingGrad:
      return ops::embedding_backward(chip, k.embedding_grad);
    case KernelKind::kCrossEntropy:
      return ops::cross_entropy(chip, k.cross_entropy);
    case KernelKind::kAdamW:
      return ops::adamw(chip, k.adamw);
    default:
      break;
  }
  throw InternalError("build_training_program: not a training kernel");
}

}  // namespace trnsim::graph
