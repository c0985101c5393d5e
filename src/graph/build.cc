#include "graph/build.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"

namespace trnsim::graph {

namespace {

Node make_node(std::string name, OpKind kind, std::vector<int> inputs,
               std::vector<int> outputs = {}) {
  Node n;
  n.name = std::move(name);
  n.kind = kind;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// The heads padded to a multiple of tp (BuildOptions::pad_heads): asked, needed, and a
// multi-head model's.
bool padded_heads(const ModelConfig& m, const BuildOptions& o) {
  return o.pad_heads && m.heads % o.tp != 0 && m.kv_heads == m.heads;
}

class Builder {
 public:
  Builder(const ModelConfig& m, const BuildOptions& o) : m_(m), o_(o) {
    g_.tp = o.tp;
    g_.batch = o.batch;
    g_.seq = o.seq;
    T_ = o.batch * o.seq;
    sp_ = o.sequence_parallel && o.tp > 1;
    g_.sequence_parallel = sp_;
    Ts_ = sp_ ? T_ / o.tp : T_;
  }

  int weight(const std::string& name, std::vector<int64_t> shape, bool fp32 = false) {
    return g_.add_value(
        {name, std::move(shape), fp32 ? num::fp32() : m_.dtype, ValueKind::kWeight});
  }
  // An activation of `rows` tokens (T, or with sequence parallelism a rank's T / tp).
  int act(const std::string& name, int64_t cols, int64_t rows = -1) {
    return g_.add_value({name, {rows < 0 ? T_ : rows, cols}, m_.dtype, ValueKind::kActivation});
  }
  int64_t rows_of(int v) const { return g_.values[static_cast<size_t>(v)].shape[0]; }
  int node(Node n) {
    n.repeat_of = layer_;
    return g_.add_node(std::move(n));
  }

  // Which linears WeightQuant quantizes.
  enum class Part : uint8_t { kOther, kAttention, kMlp };
  bool quantized(Part p) const {
    return o_.quant.dtype && (p == Part::kMlp || (p == Part::kAttention && !o_.quant.mlp_only));
  }
  // A [in, out] weight, in the quantized format when `q` (its scale value, [out] fp32, added to
  // `scales`), else the model's dtype (-1 in `scales`).
  int linear_weight(const std::string& name, int64_t in, int64_t out, bool q,
                    std::vector<int>& scales) {
    if (!q) {
      scales.push_back(-1);
      return weight(name, {in, out});
    }
    const int w = g_.add_value({name, {in, out}, *o_.quant.dtype, ValueKind::kWeight});
    scales.push_back(weight(name.substr(0, name.size() - 6) + "scale", {out}, true));
    return w;
  }
  static void drop_unquantized(Node& n) {
    if (std::all_of(n.scales.begin(), n.scales.end(), [](int s) { return s < 0; }))
      n.scales.clear();
  }

  // column: a column-parallel linear (its input gradient is a partial sum, node.h).
  int linear(const std::string& name, int x, int64_t in, int64_t out, bool bias,
             bool column = false, Part part = Part::kOther) {
    Node n = make_node(name, OpKind::kLinear, {x});
    n.column_parallel = column && o_.tp > 1;
    n.weights = {linear_weight(name + ".weight", in, out, quantized(part), n.scales)};
    drop_unquantized(n);
    if (bias) n.biases = {weight(name + ".bias", {out}, true)};
    const int y = act(name, out);
    n.outputs = {y};
    node(std::move(n));
    return y;
  }
  int norm(const std::string& name, int x, int64_t features) {
    Node n = make_node(name, OpKind::kNorm, {x});
    n.norm = m_.norm;
    n.eps = m_.eps;
    n.norm_weights = {weight(name + ".weight", {features}, true)};
    if (m_.norm == ops::Norm::kLayer)
      n.norm_weights.push_back(weight(name + ".bias", {features}, true));
    const int y = act(name, features, rows_of(x));
    n.outputs = {y};
    node(std::move(n));
    return y;
  }
  int binary(const std::string& name, OpKind kind, int a, int b, int64_t cols) {
    const int y = act(name, cols, rows_of(a));
    node(make_node(name, kind, {a, b}, {y}));
    return y;
  }
  int unary_act(const std::string& name, int x, ops::Act a, int64_t cols) {
    const int y = act(name, cols, rows_of(x));
    Node n = make_node(name, OpKind::kAct, {x}, {y});
    n.act = a;
    node(std::move(n));
    return y;
  }
  int all_reduce(const std::string& name, int x, int64_t cols) {
    if (o_.tp == 1) return x;
    const int y = act(name, cols);
    node(make_node(name, OpKind::kAllReduce, {x}, {y}));
    return y;
  }
  // The sum of the ranks' partial results: all-reduced, or with sequence parallelism
  // reduce-scattered, each rank keeping its shard of the tokens (Megatron's g-bar).
  int reduce(const std::string& name, int x, int64_t cols) {
    if (!sp_) return all_reduce(name + ".all_reduce", x, cols);
    const int y = act(name + ".reduce_scatter", cols, Ts_);
    node(make_node(name + ".reduce_scatter", OpKind::kReduceScatter, {x}, {y}));
    return y;
  }
  // A rank's shard of the tokens gathered from all ranks before a column-parallel linear
  // (Megatron's g with sequence parallelism); without it, x as it is.
  int gather(const std::string& name, int x, int64_t cols) {
    if (!sp_) return x;
    const int y = act(name + ".all_gather", cols);
    node(make_node(name + ".all_gather", OpKind::kAllGather, {x}, {y}));
    return y;
  }
  int per_head(const std::string& name, OpKind kind, int x, int64_t heads) {
    const int64_t d = m_.head_dim;
    const int y = act(name, heads * d);
    Node n = make_node(name, kind, {x}, {y});
    n.heads = heads;
    n.head_dim = d;
    n.batch = o_.batch;
    n.seq = o_.seq;
    n.rope_theta = m_.rope_theta;
    n.rope_scaling = m_.rope_scaling;
    if (kind == OpKind::kHeadNorm) {
      n.norm = ops::Norm::kRms;
      n.eps = m_.eps;
      n.norm_weights = {weight(name + ".weight", {d}, true)};
    }
    node(std::move(n));
    return y;
  }

  // A sparse MoE block (Mixtral's block_sparse_moe, Qwen3-MoE's and gpt-oss's mlp): router,
  // top-k, each expert's GLU MLP (intermediate column-parallel over the ranks), the weighted
  // combine; then the all-reduce and the residual add. Returns the new residual stream.
  int moe(const std::string& p, int x, int xm) {
    const int64_t H = m_.hidden, inter = m_.expert_intermediate * o_.ep / o_.tp;
    Node n = make_node(p, OpKind::kMoe, {xm});
    n.experts = m_.experts;
    n.expert_ranks = o_.ep;
    n.expert_dp = o_.expert_dp;
    n.top_k = m_.experts_per_token;
    n.norm_top_k = m_.norm_top_k;
    n.act = m_.mlp_act;
    n.weights = {linear_weight(p + ".gate.weight", H, m_.experts, false, n.scales)};
    const bool q = quantized(Part::kMlp);
    for (int64_t e = 0; e < m_.experts / (o_.ep * o_.expert_dp); ++e) {  // rank 0's experts
      const std::string ep = fmt::format("{}.experts.{}.", p, e);
      n.weights.push_back(linear_weight(ep + "gate_proj.weight", H, inter, q, n.scales));
      n.weights.push_back(linear_weight(ep + "up_proj.weight", H, inter, q, n.scales));
      n.weights.push_back(linear_weight(ep + "down_proj.weight", inter, H, q, n.scales));
    }
    drop_unquantized(n);
    const int y = act(p + ".experts", H);
    n.outputs = {y};
    node(std::move(n));
    const int r = reduce(p, y, H);
    return binary(p.substr(0, p.size() - 3) + "mlp_residual", OpKind::kAdd, x, r, H);
  }

  // An EAGLE draft's input: fc([embedding, target hidden]) = e W_e + h W_h, row-parallel over
  // the ranks as NxD shards it: each rank holds H / tp columns of the embedding table (its
  // slice of e, no all-reduce) and reads its H / tp slice of the target's hidden state, so it
  // multiplies [T, H / tp] by [H / tp, H] twice; the partial sums are added and all-reduced.
  int eagle_fc(Node e) {
    const int tp = o_.tp;
    const int64_t H = m_.hidden, part = H / tp;
    if (H % tp != 0)
      throw InputError(m_.name, "tp", fmt::format("{} ranks do not divide hidden {}", tp, H));
    e.weights = {weight("embed_tokens.weight", {m_.vocab, part})};
    const int emb = act("embed_tokens", part);
    e.outputs = {emb};
    node(std::move(e));
    const int hidden = g_.add_value({"target_hidden", {T_, part}, m_.dtype, ValueKind::kInput});
    const int fe = linear("fc.embed", emb, part, H, false);
    const int fh = linear("fc.hidden", hidden, part, H, false);
    const int sum = binary("fc", OpKind::kAdd, fh, fe, H);
    return all_reduce("fc.all_reduce", sum, H);
  }

  Graph build() {
    const int tp = o_.tp;
    const int64_t H = m_.hidden, d = m_.head_dim;
    // More ranks than kv heads: each rank keeps one kv head, replicated tp / kv_heads times
    // (NxD's kv-head replication), so its q heads still find theirs.
    // Padded (BuildOptions::pad_heads): ceil(heads / tp) q and kv heads a rank.
    const int64_t hq = (m_.heads + tp - 1) / tp;
    const int64_t hkv = padded_heads(m_, o_) ? hq : std::max<int64_t>(1, m_.kv_heads / tp);
    const int64_t inter = m_.intermediate / tp;
    const std::string attn = m_.model_type == "bert" ? "attention" : "self_attn";
    // Embeddings.
    // With sequence parallelism and a replicated table, each rank looks up its own shard of
    // the tokens; a vocabulary-split table looks up every token and reduce-scatters.
    const bool vocab_split = o_.vocab_parallel && tp > 1;
    const int64_t id_rows = sp_ && !vocab_split ? Ts_ : T_;
    const int ids = g_.add_value(
        {"input_ids", {id_rows}, num::int_format(num::Dtype::kInt32), ValueKind::kInput});
    Node e = make_node("embed_tokens", OpKind::kEmbedding, {ids});
    if (!m_.eagle_draft)  // an EAGLE head's table is split by columns (eagle_fc)
      e.weights = {
          weight("embed_tokens.weight", {vocab_split ? (m_.vocab + tp - 1) / tp : m_.vocab, H})};
    if (m_.learned_positions) {
      e.inputs.push_back(g_.add_value(
          {"position_ids", {id_rows}, num::int_format(num::Dtype::kInt32), ValueKind::kInput}));
      e.weights.push_back(weight("embed_positions.weight", {m_.max_positions, H}));
    }
    int x = -1;
    if (m_.eagle_draft) {
      x = eagle_fc(std::move(e));
    } else {
      x = act("embed_tokens", H, id_rows);
      e.outputs = {x};
      node(std::move(e));
      if (vocab_split) x = reduce("embed_tokens", x, H);
    }
    if (m_.post_norm) x = norm("embeddings.LayerNorm", x, H);
    const int64_t layers = o_.layers < 0 ? m_.layers : o_.layers;
    for (int64_t l = 0; l < layers; ++l) {
      layer_ = static_cast<int>(l);
      const std::string p = fmt::format("layers.{}.", l);
      const int xa = gather(p + attn, m_.post_norm ? x : norm(p + "input_layernorm", x, H), H);
      const Part pa = Part::kAttention, pm = Part::kMlp;
      int q = linear(p + attn + ".q_proj", xa, H, hq * d, m_.attn_bias, true, pa);
      int k = linear(p + attn + ".k_proj", xa, H, hkv * d, m_.attn_bias, true, pa);
      const int v = linear(p + attn + ".v_proj", xa, H, hkv * d, m_.attn_bias, true, pa);
      if (m_.qk_norm) {
        q = per_head(p + attn + ".q_norm", OpKind::kHeadNorm, q, hq);
        k = per_head(p + attn + ".k_norm", OpKind::kHeadNorm, k, hkv);
      }
      if (m_.rope) {
        q = per_head(p + attn + ".rope_q", OpKind::kRope, q, hq);
        k = per_head(p + attn + ".rope_k", OpKind::kRope, k, hkv);
      }
      Node a = make_node(p + attn + ".attn", OpKind::kAttention, {q, k, v});
      a.heads = hq;
      a.kv_heads = hkv;
      a.head_dim = d;
      a.causal = m_.causal;
      a.eager = o_.eager_attention;
      a.batch = o_.batch;
      a.seq = o_.seq;
      if (o_.kv_cache) {
        a.kv_cache = true;
        a.kv_seq = o_.past + o_.seq;
        for (const char* c : {"k_cache", "v_cache"})
          a.state.push_back(g_.add_value({p + attn + "." + c,
                                          {o_.batch * a.kv_seq, hkv * d},
                                          o_.kv_cache_dtype.value_or(m_.dtype),
                                          ValueKind::kCache}));
      }
      const int ao = act(a.name, hq * d);
      a.outputs = {ao};
      node(std::move(a));
      int o = linear(p + attn + ".o_proj", ao, hq * d, H, m_.attn_bias, false, pa);
      o = reduce(p + attn, o, H);
      x = binary(p + "attn_residual", OpKind::kAdd, x, o, H);
      if (m_.post_norm) x = norm(p + "attention.output.LayerNorm", x, H);
      const int xm =
          gather(p + "mlp", m_.post_norm ? x : norm(p + "post_attention_layernorm", x, H), H);
      int mlp;
      if (m_.moe()) {
        x = moe(p + "mlp", x, xm);
        continue;
      }
      if (ops::is_glu(m_.mlp_act)) {
        const int gate = linear(p + "mlp.gate_proj", xm, H, inter, m_.mlp_bias, true, pm);
        const int up = linear(p + "mlp.up_proj", xm, H, inter, m_.mlp_bias, true, pm);
        const ops::Act single =
            m_.mlp_act == ops::Act::kGluSilu ? ops::Act::kSilu : ops::Act::kGelu;
        const int ga = unary_act(p + "mlp.act_fn", gate, single, inter);
        mlp = binary(p + "mlp.gate_mul", OpKind::kMul, ga, up, inter);
      } else {
        const int f = linear(p + "mlp.fc_in", xm, H, inter, m_.mlp_bias, true, pm);
        mlp = unary_act(p + "mlp.act_fn", f, m_.mlp_act, inter);
      }
      int dn = linear(p + "mlp.down_proj", mlp, inter, H, m_.mlp_bias, false, pm);
      dn = reduce(p + "mlp", dn, H);
      x = binary(p + "mlp_residual", OpKind::kAdd, x, dn, H);
      if (m_.post_norm) x = norm(p + "output.LayerNorm", x, H);
    }
    layer_ = -1;
    int out = x;
    // The vocabulary of the head split over the ranks and padded to a multiple of them, as
    // Megatron pads it.
    const int64_t vocab_per_rank = (m_.vocab + tp - 1) / tp;
    if (m_.model_type != "bert") {
      const int xf = gather("lm_head", norm("norm", x, H), H);
      out = linear("lm_head", xf, H, vocab_per_rank, false, true);
    } else if (o_.mlm_head) {
      const std::string c = "cls.predictions";
      int t = linear(c + ".transform.dense", gather(c, x, H), H, H, true);
      t = unary_act(c + ".transform.act_fn", t, m_.mlp_act, H);
      t = norm(c + ".transform.LayerNorm", t, H);
      out = linear(c + ".decoder", t, H, vocab_per_rank, true, true);
    } else {
      out = gather("encoder", x, H);  // the encoder's output, whole
    }
    g_.values[static_cast<size_t>(out)].kind = ValueKind::kOutput;
    return std::move(g_);
  }

 private:
  const ModelConfig& m_;
  const BuildOptions& o_;
  Graph g_;
  int64_t T_ = 0, Ts_ = 0;  // tokens, and a rank's shard of them (sequence parallelism)
  bool sp_ = false;
  int layer_ = -1;
};

void divisible(const ModelConfig& m, const char* what, int64_t n, int tp) {
  if (n % tp != 0)
    throw InputError(m.name, "tp",
                     fmt::format("{} tensor-parallel ranks do not divide the {} {}", tp, n, what));
}

}  // namespace

std::optional<num::Format> quantized_weight_format(const arch::ChipSpec& chip,
                                                   std::string_view name, std::string_view key) {
  if (name == "bf16" || name == "none") return std::nullopt;
  if (name == "int8") return num::int_format(num::Dtype::kInt8);
  if (name == "fp8") {  // OCP e4m3fn where TensorE takes it, else the legacy e4m3
    const auto& formats = chip.numerics.tensor_fp8_formats;
    for (const char* f : {"fp8_e4m3fn", "fp8_e4m3"})
      if (std::find(formats.begin(), formats.end(), f) != formats.end())
        return num::parse_format(f);
    throw InputError("weights", std::string(key),
                     fmt::format("{}'s TensorE takes no FP8 E4M3", chip.meta.name));
  }
  if (name == "fp8_e4m3" || name == "fp8_e4m3fn" || name == "fp8_e5m2")
    return num::parse_format(name);
  throw InputError(
      "weights", std::string(key),
      fmt::format("'{}': bf16 (none), int8, fp8, fp8_e4m3, fp8_e4m3fn or fp8_e5m2", name));
}

std::optional<num::Format> kv_cache_format(const arch::ChipSpec& chip, std::string_view name) {
  if (name == "bf16" || name == "auto" || name == "none") return std::nullopt;
  if (name == "fp8" || name == "fp8_e4m3" || name == "fp8_e4m3fn" || name == "fp8_e5m2")
    return quantized_weight_format(chip, name, "kv_cache_dtype");
  throw InputError("kv_cache", "kv_cache_dtype",
                   fmt::format("'{}': bf16 (auto), fp8, fp8_e4m3, fp8_e4m3fn or fp8_e5m2", name));
}

bool splits_into(const ModelConfig& m, int64_t shards, int64_t ep) {
  if (ep != 1 && (!m.moe() || ep < 1 || shards % ep != 0 || m.experts % ep != 0)) return false;
  const int64_t inter = m.moe() ? m.expert_intermediate * ep : m.intermediate;
  return shards >= 1 && m.heads % shards == 0 && inter % shards == 0 &&
         (m.kv_heads % shards == 0 || shards % m.kv_heads == 0);
}

Graph build_model_graph(const ModelConfig& m, const BuildOptions& o) {
  if (m.moe() && !ops::is_glu(m.mlp_act))
    throw InputError(m.name, "hidden_act", "experts are GLU MLPs (silu or gelu)");
  if (o.tp < 1)
    throw InputError(m.name, "tp", fmt::format("{} is not a positive rank count", o.tp));
  if (o.past < 0 || (o.past > 0 && !o.kv_cache))
    throw InputError(m.name, "past", "earlier positions need a KV cache (kv_cache) and past >= 0");
  if (o.kv_cache_dtype && !o.kv_cache)
    throw InputError(m.name, "kv_cache_dtype", "a cache format needs a KV cache (serving)");
  if (o.sequence_parallel && o.tp > 1) {
    if (o.kv_cache)
      throw InputError(m.name, "sequence_parallel",
                       "sequence parallelism splits a prefill's or a training step's tokens; a "
                       "decode step through a KV cache is not split");
    if (m.eagle_draft)
      throw InputError(m.name, "sequence_parallel",
                       "an EAGLE draft head runs in decode steps, which are not split");
    if ((o.batch * o.seq) % o.tp != 0)
      throw InputError(m.name, "sequence_parallel",
                       fmt::format("{} tokens do not split evenly over {} tensor-parallel ranks",
                                   o.batch * o.seq, o.tp));
  }
  if (o.eager_attention && o.kv_cache)
    throw InputError(m.name, "attention",
                     "eager attention is modelled for prefill-only forwards and training, not "
                     "with a KV cache (decode steps read the cache with the flash kernel)");
  if (m.learned_positions && o.past + o.seq > m.max_positions)
    throw InputError(m.name, "seq",
                     fmt::format("{} positions exceed the model's {} learned positions",
                                 o.past + o.seq, m.max_positions));
  if (o.batch < 1 || o.seq < 1)
    throw InputError(m.name, o.batch < 1 ? "batch" : "seq", "must be at least 1");
  if (o.layers == 0 || o.layers < -1 || o.layers > m.layers)
    throw InputError(m.name, "layers", fmt::format("{} is outside 1..{}", o.layers, m.layers));
  const bool padded = padded_heads(m, o);
  if (!padded && m.heads % o.tp != 0)
    throw InputError(
        m.name, "tp",
        fmt::format("{} tensor-parallel ranks do not divide the {} attention heads{}", o.tp,
                    m.heads,
                    o.pad_heads ? " (heads are padded to a multiple of tp only when every head "
                                  "has its own kv head)"
                                : ""));
  if (!padded && m.kv_heads % o.tp != 0 && o.tp % m.kv_heads != 0)
    throw InputError(m.name, "tp",
                     fmt::format("{} tensor-parallel ranks neither divide the {} kv heads nor are "
                                 "a multiple of them (to replicate each)",
                                 o.tp, m.kv_heads));
  if (o.expert_dp != 1 &&
      (!m.moe() || o.expert_dp < 1 || m.experts % (int64_t{o.ep} * o.expert_dp) != 0))
    throw InputError(m.name, "expert_dp",
                     fmt::format("experts over {} x {} expert-parallel ranks: the model must be a "
                                 "mixture of experts whose {} experts they divide",
                                 o.ep, o.expert_dp, m.experts));
  if (o.ep != 1) {
    if (!m.moe())
      throw InputError(m.name, "ep", "expert parallelism needs a mixture-of-experts model");
    if (o.ep < 1 || o.tp % o.ep != 0 || m.experts % o.ep != 0)
      throw InputError(m.name, "ep",
                       fmt::format("{} expert-parallel ranks must divide the {} tensor-parallel "
                                   "ranks and the {} experts",
                                   o.ep, o.tp, m.experts));
  }
  divisible(m, "intermediate columns", m.moe() ? m.expert_intermediate * o.ep : m.intermediate,
            o.tp);
  TRNSIM_ASSERT(
      padded ||
      splits_into(m, o.tp, o.ep));  // the checks above are that rule, each with its message
  if (m.learned_positions && o.seq > m.max_positions)
    throw InputError(
        m.name, "seq",
        fmt::format("{} tokens exceed the model's {} learned positions", o.seq, m.max_positions));
  return Builder(m, o).build();
}

}  // namespace trnsim::graph
