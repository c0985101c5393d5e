#include "graph/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace trnsim::graph {

namespace {

const Value& val(const Graph& g, int id) { return g.values[static_cast<size_t>(id)]; }

int64_t cols(const Graph& g, int id) { return val(g, id).shape.back(); }
// Tokens of an activation: the graph's batch x seq, or a rank's shard of them (sequence
// parallelism).
int64_t rows(const Graph& g, int id) { return val(g, id).shape.front(); }

}  // namespace

bool is_training_kernel(KernelKind k) { return k >= KernelKind::kLinearGradInput; }

std::string_view Kernel::kind_name() const {
  switch (kind) {
    case KernelKind::kLinearGradInput:
      return "grad_input";
    case KernelKind::kLinearGradWeight:
      return "grad_weight";
    case KernelKind::kAttentionGrad:
      return "attn_grad";
    case KernelKind::kNormGrad:
      return "norm_grad";
    case KernelKind::kActGrad:
      return "act_grad";
    case KernelKind::kEmbeddingGrad:
      return "embed_grad";
    case KernelKind::kCrossEntropy:
      return "loss";
    case KernelKind::kAdamW:
      return "adamw";
    case KernelKind::kLinear:
      return "linear";
    case KernelKind::kAttention:
      return "attention";
    case KernelKind::kNorm:
      return "norm";
    case KernelKind::kEmbedding:
      return "embedding";
    case KernelKind::kElementwise:
      return "elementwise";
    case KernelKind::kRouter:
      return "router";
    case KernelKind::kAllReduce:
      return "all_reduce";
    case KernelKind::kAllGather:
      return "all_gather";
    case KernelKind::kReduceScatter:
      return "reduce_scatter";
    default:
      break;
  }
  return "?";
}

bool is_collective(KernelKind k) {
  return k == KernelKind::kAllReduce || k == KernelKind::kAllGather ||
         k == KernelKind::kReduceScatter;
}

std::string Kernel::key() const {
  if (is_training_kernel(kind)) return training_key(*this);
  switch (kind) {
    case KernelKind::kLinear: {
      const auto& s = linear;
      return fmt::format(
          "linear T{} K{} N{} {} norm={} eps={} rin={} bias={} act={} rout={} packed={} w={}{}",
          s.tokens, s.in, s.out, s.dtype.name(), ops::name(s.norm), s.eps, s.residual_in, s.bias,
          ops::name(s.act), s.residual_out, s.packed_weights,
          s.weight_dtype.value_or(s.dtype).name(), s.weight_scale ? " scaled" : "");
    }
    case KernelKind::kAttention: {
      const auto& s = attention;
      return fmt::format(
          "attention B{} S{} Hq{} Hkv{} d{} {} causal={} rope={} qk_norm={} cache={} lse={}{}{}",
          s.batch, s.seq, s.q_heads, s.kv_heads, s.head_dim, s.dtype.name(), s.causal, s.rope,
          s.qk_norm, s.kv_cache ? s.kv_seq : 0, s.save_lse, s.eager ? " eager" : "",
          s.cache_dtype ? fmt::format(" cache_dtype={} k{} v{}", s.cache_dtype->name(), s.k_scale,
                                      s.v_scale)
                        : "");
    }
    case KernelKind::kNorm:
      return fmt::format("norm T{} F{} {} {} eps={} rin={}", norm.tokens, norm.features,
                         norm.dtype.name(), ops::name(norm.norm), norm.eps, norm.residual_in);
    case KernelKind::kEmbedding:
      return fmt::format("embedding T{} V{} H{} P{} {}", embedding.tokens, embedding.vocab,
                         embedding.hidden, embedding.positions, embedding.dtype.name());
    case KernelKind::kElementwise:
      return fmt::format("elementwise T{} F{} {} op={} act={}", elementwise.tokens,
                         elementwise.features, elementwise.dtype.name(),
                         static_cast<int>(elementwise.op), ops::name(elementwise.act));
    case KernelKind::kRouter:
      return fmt::format("router T{} E{} k{} {}{}", router.tokens, router.experts, router.top_k,
                         router.dtype.name(), router.normalize ? "" : " full-softmax");
    case KernelKind::kAllReduce:
    case KernelKind::kAllGather:
    case KernelKind::kReduceScatter:
      return fmt::format("{} {}B {}", kind_name(), collective_bytes, collective_dtype.name());
    default:
      break;
  }
  return "?";
}

std::string Kernel::describe() const {
  if (is_training_kernel(kind)) return training_describe(*this);
  switch (kind) {
    case KernelKind::kLinear: {
      const auto& s = linear;
      std::string d = fmt::format("{}x{} @ {}x{}", s.tokens, s.in, s.in, s.out);
      if (s.norm != ops::Norm::kNone) d = std::string(ops::name(s.norm)) + " + " + d;
      if (s.residual_in) d = "add + " + d;
      if (s.bias) d += " + bias";
      if (s.act != ops::Act::kNone) d += fmt::format(" {}", ops::name(s.act));
      if (s.residual_out) d += " + residual";
      if (s.weight_dtype && *s.weight_dtype != s.dtype)
        d += fmt::format(" ({} weights)", s.weight_dtype->name());
      return d;
    }
    case KernelKind::kAttention: {
      const auto& s = attention;
      std::string d = fmt::format("{}x{} tokens, {}q/{}kv heads x {}", s.batch, s.seq, s.q_heads,
                                  s.kv_heads, s.head_dim);
      if (s.causal) d += " causal";
      if (s.qk_norm) d += " qk-norm";
      if (s.kv_cache)
        d += fmt::format(" cache {}{}", s.kv_seq,
                         s.cache_dtype ? " " + s.cache_dtype->name() : std::string());
      if (s.rope) d += " rope";
      if (s.eager) d += " eager";
      return d;
    }
    case KernelKind::kNorm:
      return fmt::format("{}{} {}x{}", norm.residual_in ? "add + " : "", ops::name(norm.norm),
                         norm.tokens, norm.features);
    case KernelKind::kEmbedding:
      return fmt::format("{} rows of {}{}", embedding.tokens, embedding.hidden,
                         embedding.positions > 0 ? " + positions" : "");
    case KernelKind::kElementwise:
      return fmt::format("{} {}x{}",
                         elementwise.op == ops::Elementwise::kAct   ? ops::name(elementwise.act)
                         : elementwise.op == ops::Elementwise::kAdd ? "add"
                                                                    : "mul",
                         elementwise.tokens, elementwise.features);
    case KernelKind::kRouter:
      return fmt::format("top-{} of {} experts, {} tokens", router.top_k, router.experts,
                         router.tokens);
    case KernelKind::kAllReduce:
    case KernelKind::kAllGather:
    case KernelKind::kReduceScatter:
      return fmt::format("{} bytes", collective_bytes);
    default:
      break;
  }
  return "?";
}

double Kernel::flops() const {
  if (is_training_kernel(kind)) return training_flops(*this);
  switch (kind) {
    case KernelKind::kLinear:
      return 2.0 * static_cast<double>(linear.tokens) * static_cast<double>(linear.in) *
             static_cast<double>(linear.out) * (ops::is_glu(linear.act) ? 2 : 1);
    case KernelKind::kAttention: {
      const auto& s = attention;
      // q k^T and p v: 2 matmuls of S x S x d per head; causal keeps S (S + 1) / 2 pairs.
      const double pairs = s.causal
                               ? static_cast<double>(s.seq) * static_cast<double>(s.seq + 1) / 2
                               : static_cast<double>(s.seq) * static_cast<double>(s.seq);
      return 4.0 * static_cast<double>(s.batch * s.q_heads * s.head_dim) * pairs;
    }
    default:
      return 0;
  }
}

Kernel lower(const Graph& g, const Node& n) {
  if (is_training_op(n.kind) && n.kind != OpKind::kMoeGrad) return lower_training(g, n);
  Kernel k;
  const num::Format dt = n.outputs.empty() ? num::bf16() : val(g, n.outputs.back()).dtype;
  const int64_t T = g.batch * g.seq;
  switch (n.kind) {
    case OpKind::kLinear: {
      k.kind = KernelKind::kLinear;
      auto& s = k.linear;
      s.tokens = rows(g, n.inputs[0]);
      s.in = cols(g, n.inputs[0]);
      s.dtype = dt;
      s.norm = n.norm;
      s.eps = n.eps;
      s.residual_in = n.residual_in;
      s.residual_out = n.residual_out;
      s.bias = !n.biases.empty();
      if (!n.scales.empty()) {  // quantized (build.h WeightQuant); else w is read as dt
        s.weight_dtype = val(g, n.weights[0]).dtype;
        s.weight_scale = true;
      }
      // The compiler's weight layout: every weight packed as its kernel streams it.
      s.packed_weights = true;
      s.act = n.act;
      s.out = 0;
      if (ops::is_glu(n.act)) {
        s.out = val(g, n.weights[0]).shape[1];
      } else {
        for (int w : n.weights) s.out += val(g, w).shape[1];
      }
      return k;
    }
    case OpKind::kAttention: {
      k.kind = KernelKind::kAttention;
      auto& s = k.attention;
      s.batch = n.batch;
      s.seq = n.seq;
      s.q_heads = n.heads;
      s.kv_heads = n.kv_heads;
      s.head_dim = n.head_dim;
      s.dtype = dt;
      s.causal = n.causal;
      s.rope = n.rope;
      s.qk_norm = n.qk_norm;
      s.eps = n.eps;
      s.kv_cache = n.kv_cache;
      s.kv_seq = n.kv_cache ? n.kv_seq : 0;
      if (n.kv_cache && val(g, n.state.at(0)).dtype != dt)  // a quantized cache (build.h)
        s.cache_dtype = val(g, n.state[0]).dtype;
      s.save_lse = n.outputs.size() == 2;  // a training forward (backward.h)
      s.eager = n.eager;
      return k;
    }
    case OpKind::kNorm:
      k.kind = KernelKind::kNorm;
      k.norm = {.tokens = rows(g, n.outputs.back()),
                .features = cols(g, n.outputs.back()),
                .dtype = dt,
                .norm = n.norm,
                .eps = n.eps,
                .residual_in = n.residual_in};
      return k;
    case OpKind::kEmbedding:
      k.kind = KernelKind::kEmbedding;
      k.embedding = {.tokens = rows(g, n.outputs[0]),
                     .vocab = val(g, n.weights[0]).shape[0],
                     .hidden = cols(g, n.outputs[0]),
                     .positions = n.weights.size() > 1 ? val(g, n.weights[1]).shape[0] : 0,
                     .dtype = dt};
      return k;
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kAct:
      k.kind = KernelKind::kElementwise;
      k.elementwise = {.tokens = rows(g, n.outputs[0]),
                       .features = cols(g, n.outputs[0]),
                       .dtype = dt,
                       .op = n.kind == OpKind::kAdd   ? ops::Elementwise::kAdd
                             : n.kind == OpKind::kMul ? ops::Elementwise::kMul
                                                      : ops::Elementwise::kAct,
                       .act = n.act};
      return k;
    case OpKind::kAllReduce:
    case OpKind::kAllGather:
    case OpKind::kReduceScatter:
      // The whole tensor's bytes (fabric/collective.h): the gathered or the reduced one.
      k.kind = n.kind == OpKind::kAllReduce   ? KernelKind::kAllReduce
               : n.kind == OpKind::kAllGather ? KernelKind::kAllGather
                                              : KernelKind::kReduceScatter;
      k.collective_bytes =
          val(g, n.kind == OpKind::kAllGather ? n.outputs[0] : n.inputs[0]).bytes();
      k.collective_dtype = dt;
      return k;
    case OpKind::kHeadNorm:
      // Not fused into an attention (a training forward keeps it for its backward): the norm
      // kernel over tokens x heads rows of head_dim, the same bytes as [tokens, heads x d].
      k.kind = KernelKind::kNorm;
      k.norm = {.tokens = T * n.heads,
                .features = n.head_dim,
                .dtype = dt,
                .norm = ops::Norm::kRms,
                .eps = n.eps,
                .residual_in = false};
      return k;
    case OpKind::kRope:
    case OpKind::kMoe:
    default:
      break;
  }
  if (n.kind == OpKind::kMoe || n.kind == OpKind::kMoeGrad)
    throw InternalError("lower: a moe node takes several kernels (lower_steps)");
  throw InputError(n.name, std::string(name(n.kind)),
                   "no kernel runs a rotary embedding on its own: it runs fused into the attention "
                   "that reads it (its result must feed an attention's q or k and nothing else)");
}

std::vector<Step> lower_steps(const Graph& g, const Node& n) {
  if (n.kind == OpKind::kCrossEntropy && g.tp > 1) {
    // Vocabulary-parallel logits (Megatron's cross-entropy): the ranks all-reduce each row's
    // max, label logit and sum of exp, [tokens] fp32 each, around the local kernel.
    Kernel ar;
    ar.kind = KernelKind::kAllReduce;
    ar.collective_bytes = g.batch * g.seq * 4;
    ar.collective_dtype = num::fp32();
    return {{lower(g, n), 1, ""}, {ar, 3, "all_reduce"}};
  }
  if (n.kind == OpKind::kMoe) return moe_steps(g, n);
  if (n.kind == OpKind::kMoeGrad) return moe_grad_steps(g, n);
  return {{lower(g, n), 1, ""}};
}

isa::Program build_program(const arch::ChipSpec& chip, const Kernel& k) {
  if (is_training_kernel(k.kind)) return build_training_program(chip, k);
  switch (k.kind) {
    case KernelKind::kLinear:
      return ops::linear(chip, k.linear);
    case KernelKind::kAttention:
      return ops::attention(chip, k.attention);
    case KernelKind::kNorm:
      return ops::norm(chip, k.norm);
    case KernelKind::kEmbedding:
      return ops::embedding(chip, k.embedding);
    case KernelKind::kElementwise:
      return ops::elementwise(chip, k.elementwise);
    case KernelKind::kRouter:
      return ops::router(chip, k.router);
    default:
      break;
  }
  throw InternalError("build_program: an all-reduce is a collective, not a kernel");
}

}  // namespace trnsim::graph
