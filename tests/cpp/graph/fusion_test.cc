// The fusion passes (graph/fusion.h) on the model families' graphs: the fused operators each
// family should end up with (not only node counts), a well-formed result for every dense
// built-in model, and lowering (graph/lower.h) of fused and unfused graphs.
#include "graph/fusion.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "graph/build.h"
#include "graph/lower.h"
#include "graph/model_config.h"

namespace trnsim::graph {
namespace {

Graph build(const char* model, BuildOptions o) {
  return build_model_graph(load_model_config(model), o);
}

int count_if(const Graph& g, const std::function<bool(const Node&)>& pred) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), pred));
}
int count(const Graph& g, OpKind k) {
  return count_if(g, [&](const Node& n) { return n.kind == k; });
}
const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

// Every value a node reads is a weight, an input, or written by an earlier node; no node is
// dead after compact(); the model output is still written.
void expect_well_formed(const Graph& g) {
  std::set<int> written;
  for (const Node& n : g.nodes) {
    EXPECT_FALSE(n.dead) << n.name;
    for (int v : n.inputs) {
      const Value& x = g.values[static_cast<size_t>(v)];
      const bool ok =
          x.kind == ValueKind::kInput || x.kind == ValueKind::kWeight || written.contains(v);
      EXPECT_TRUE(ok) << n.name << " reads " << x.name << " before it is written";
    }
    for (int v : n.outputs) {
      EXPECT_FALSE(written.contains(v))
          << g.values[static_cast<size_t>(v)].name << " written twice";
      written.insert(v);
    }
  }
  int outputs = 0;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ValueKind::kOutput) {
      ++outputs;
      EXPECT_TRUE(written.contains(static_cast<int>(v))) << g.values[v].name;
    }
  EXPECT_EQ(outputs, 1);
}

// tiny-llama, 2 layers: 35 front-end operators -> 12 kernels: the embedding; per layer the
// normed q+k+v linear, the attention (rope inside), o_proj, the add + norm + gate+up SwiGLU
// linear, down_proj; the add + final norm + lm_head.
TEST(Fusion, LlamaFusesIntoTwelveKernels) {
  Graph g = build("tiny-llama", {.seq = 128, .tp = 1});
  const FusionReport r = fuse(g);
  EXPECT_EQ(r.nodes_before, 35);
  EXPECT_EQ(r.nodes_after, 12);
  EXPECT_EQ(static_cast<int>(g.nodes.size()), r.nodes_after);
  expect_well_formed(g);
  EXPECT_FALSE(r.applied.empty());

  EXPECT_EQ(count(g, OpKind::kEmbedding), 1);
  EXPECT_EQ(g.nodes.front().kind, OpKind::kEmbedding);
  for (OpKind k : {OpKind::kAdd, OpKind::kMul, OpKind::kAct, OpKind::kRope, OpKind::kHeadNorm,
                   OpKind::kNorm, OpKind::kAllReduce})
    EXPECT_EQ(count(g, k), 0) << name(k);
  EXPECT_EQ(count(g, OpKind::kAttention), 2);
  EXPECT_EQ(count_if(g, [](const Node& n) { return n.kind == OpKind::kAttention && n.rope; }), 2);
  EXPECT_EQ(count_if(g, [](const Node& n) { return n.qk_norm; }), 0);
  EXPECT_EQ(count(g, OpKind::kLinear), 9);
  EXPECT_EQ(count_if(g, [](const Node& n) { return n.act == ops::Act::kGluSilu; }), 2);
  // Every pre-norm folds into the linear after it: 2 x (q+k+v, gate+up) + lm_head.
  EXPECT_EQ(count_if(g, [](const Node& n) { return n.norm == ops::Norm::kRms; }), 5);
  // and every residual add but the first layer's input (the embedding, no add) into a norm.
  EXPECT_EQ(count_if(g, [](const Node& n) { return n.residual_in; }), 4);
  EXPECT_EQ(count_if(g, [](const Node& n) { return n.residual_out; }), 0);

  // q+k+v: one linear, three outputs of 4 x 64, 2 x 64, 2 x 64 columns, normed, no residual.
  const Node* qkv = find_node(g, "layers.0.self_attn.q_proj+k_proj+v_proj");
  ASSERT_NE(qkv, nullptr) << g.dump();
  EXPECT_EQ(qkv->kind, OpKind::kLinear);
  EXPECT_EQ(qkv->weights.size(), 3u);
  EXPECT_EQ(qkv->outputs.size(), 3u);
  EXPECT_EQ(qkv->splits, (std::vector<int64_t>{256, 128, 128}));
  EXPECT_EQ(qkv->norm, ops::Norm::kRms);
  EXPECT_FALSE(qkv->residual_in);  // layer 0 reads the embedding
  EXPECT_EQ(qkv->norm_weights.size(), 1u);
  // The attention reads that linear's three outputs directly.
  const Node* at = find_node(g, "layers.0.self_attn.attn");
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(at->inputs, qkv->outputs);
  EXPECT_NE(std::find(at->fused.begin(), at->fused.end(), "layers.0.self_attn.rope_q"),
            at->fused.end());
  // Layer 1's q+k+v adds layer 0's MLP residual and writes the sum (h) first.
  const Node* qkv1 = find_node(g, "layers.1.self_attn.q_proj+k_proj+v_proj");
  ASSERT_NE(qkv1, nullptr);
  EXPECT_TRUE(qkv1->residual_in);
  EXPECT_EQ(qkv1->outputs.size(), 4u);
  // gate+up: add + rmsnorm + SwiGLU, one output of 512 columns, reading (x, o_proj's result).
  const Node* mlp = find_node(g, "layers.0.mlp.gate_proj+up_proj");
  ASSERT_NE(mlp, nullptr) << g.dump();
  EXPECT_EQ(mlp->act, ops::Act::kGluSilu);
  EXPECT_TRUE(mlp->residual_in);
  EXPECT_EQ(mlp->norm, ops::Norm::kRms);
  EXPECT_EQ(mlp->weights.size(), 2u);
  EXPECT_EQ(mlp->outputs.size(), 2u);  // h, then the GLU result
  EXPECT_EQ(mlp->inputs.size(), 2u);
  const Node* o_proj = find_node(g, "layers.0.self_attn.o_proj");
  ASSERT_NE(o_proj, nullptr);
  EXPECT_EQ(mlp->inputs[1], o_proj->outputs[0]);
  for (const char* f : {"layers.0.mlp.act_fn", "layers.0.mlp.gate_mul",
                        "layers.0.post_attention_layernorm", "layers.0.attn_residual"})
    EXPECT_NE(std::find(mlp->fused.begin(), mlp->fused.end(), f), mlp->fused.end()) << f;
  // lm_head: add + final norm + matmul, the model output.
  const Node& head = g.nodes.back();
  EXPECT_EQ(head.name, "lm_head");
  EXPECT_TRUE(head.residual_in);
  EXPECT_EQ(head.norm, ops::Norm::kRms);
  EXPECT_EQ(g.values[static_cast<size_t>(head.outputs.back())].kind, ValueKind::kOutput);
}

// Qwen3: per-head q / k RMSNorms fold into the attention with the rope.
TEST(Fusion, Qwen3QkNormFoldsIntoAttention) {
  Graph g = build("qwen3-8b", {.seq = 128, .tp = 8, .layers = 1});
  EXPECT_EQ(count(g, OpKind::kHeadNorm), 2);
  fuse(g);
  expect_well_formed(g);
  EXPECT_EQ(count(g, OpKind::kHeadNorm), 0);
  EXPECT_EQ(count(g, OpKind::kRope), 0);
  ASSERT_EQ(count(g, OpKind::kAttention), 1);
  const Node& at = *std::find_if(g.nodes.begin(), g.nodes.end(),
                                 [](const Node& n) { return n.kind == OpKind::kAttention; });
  EXPECT_TRUE(at.qk_norm);
  EXPECT_TRUE(at.rope);
  EXPECT_EQ(at.norm_weights.size(), 2u);  // q gamma, k gamma
  EXPECT_EQ(at.heads, 4);                 // 32 / 8
  EXPECT_EQ(at.kv_heads, 1);              // 8 / 8
  EXPECT_DOUBLE_EQ(at.rope_theta, load_model_config("qwen3-8b").rope_theta);
  // tp 8: the two all-reduces stay collectives of their own.
  EXPECT_EQ(count(g, OpKind::kAllReduce), 2);
}

// BERT (post-norm): each residual add folds into the LayerNorm after it; the embeddings'
// LayerNorm (read by q+k+v and by the first residual) stays a norm; GELU into fc_in.
TEST(Fusion, BertPostNormFoldsAddsIntoNorms) {
  Graph g = build("bert-large", {.seq = 128, .tp = 1, .layers = 1});
  fuse(g);
  expect_well_formed(g);
  EXPECT_EQ(g.nodes.size(), 9u) << g.dump();
  EXPECT_EQ(count(g, OpKind::kAdd), 0);
  EXPECT_EQ(count(g, OpKind::kAct), 0);
  EXPECT_EQ(count(g, OpKind::kRope), 0);
  EXPECT_EQ(count(g, OpKind::kNorm), 3);
  EXPECT_EQ(count_if(g,
                     [](const Node& n) {
                       return n.kind == OpKind::kNorm && n.residual_in &&
                              n.norm == ops::Norm::kLayer && n.norm_weights.size() == 2;
                     }),
            2);
  EXPECT_EQ(
      count_if(
          g, [](const Node& n) { return n.norm != ops::Norm::kNone && n.kind == OpKind::kLinear; }),
      0);  // post-norm: nothing to fold into a matmul
  EXPECT_EQ(count_if(g, [](const Node& n) { return n.act == ops::Act::kGelu; }), 1);
  for (const Node& n : g.nodes) {
    if (n.kind == OpKind::kAttention) {
      EXPECT_FALSE(n.rope);
      EXPECT_FALSE(n.causal);
    }
    if (n.kind == OpKind::kLinear) EXPECT_EQ(n.biases.size(), n.weights.size()) << n.name;
  }
  EXPECT_EQ(g.nodes.front().weights.size(), 2u);  // word and position tables
}

// GPT-3 (pre-norm LayerNorm, biases everywhere, GELU tanh): the LayerNorm prologue folds into
// the biased q+k+v and fc_in linears and the final one into lm_head.
TEST(Fusion, Gpt3LayerNormPrologueIntoBiasedLinears) {
  Graph g = build("gpt3-6.7b", {.seq = 128, .tp = 8, .layers = 1});
  fuse(g);
  expect_well_formed(g);
  EXPECT_EQ(count(g, OpKind::kNorm), 0) << g.dump();
  EXPECT_EQ(count(g, OpKind::kAct), 0);
  EXPECT_EQ(count(g, OpKind::kAdd), 0);
  const auto layer_norm_linears = count_if(
      g, [](const Node& n) { return n.kind == OpKind::kLinear && n.norm == ops::Norm::kLayer; });
  EXPECT_EQ(layer_norm_linears, 3);  // q+k+v, fc_in, lm_head
  for (const Node& n : g.nodes) {
    if (n.kind != OpKind::kLinear || n.norm != ops::Norm::kLayer) continue;
    EXPECT_EQ(n.norm_weights.size(), 2u) << n.name;  // gamma and beta
    if (n.name != "lm_head") {
      EXPECT_FALSE(n.biases.empty()) << n.name;
      EXPECT_EQ(n.biases.size(), n.weights.size()) << n.name;
    }
  }
  const Node* qkv = find_node(g, "layers.0.self_attn.q_proj+k_proj+v_proj");
  ASSERT_NE(qkv, nullptr) << g.dump();
  EXPECT_EQ(qkv->biases.size(), 3u);
  const Node* fc = find_node(g, "layers.0.mlp.fc_in");
  ASSERT_NE(fc, nullptr) << g.dump();
  EXPECT_EQ(fc->act, ops::Act::kGeluTanh);
  EXPECT_TRUE(fc->residual_in);
  EXPECT_EQ(count(g, OpKind::kAllReduce), 2);
}

// Every built-in model fuses into a well-formed graph whose nodes all lower (a MoE block to
// its several kernels, lower_steps), with no front-end-only operator left.
TEST(Fusion, EveryModelFusesAndLowers) {
  for (const std::string& name : list_models()) {
    const ModelConfig m = load_model_config(name);
    SCOPED_TRACE(name);
    Graph g = build_model_graph(m, {.seq = 128, .tp = 1, .layers = std::min<int64_t>(2, m.layers)});
    const FusionReport r = fuse(g);
    EXPECT_LT(r.nodes_after, r.nodes_before);
    expect_well_formed(g);
    EXPECT_EQ(count(g, OpKind::kRope), 0);
    EXPECT_EQ(count(g, OpKind::kHeadNorm), 0);
    EXPECT_EQ(count(g, OpKind::kMoe) > 0, m.moe());
    for (const Node& n : g.nodes) {
      std::vector<Step> steps;
      EXPECT_NO_THROW(steps = lower_steps(g, n)) << n.name;
      EXPECT_EQ(steps.size() > 1, n.kind == OpKind::kMoe) << n.name;
      for (const Step& st : steps) {
        EXPECT_FALSE(st.kernel.key().empty());
        EXPECT_GE(st.repeat, 1);
      }
    }
  }
}

// A pre-norm MoE block: the norm before the router feeds no linear, so the residual add folds
// into it as add + norm, and the norm writes the sum (the next residual) too.
TEST(Fusion, MoeBlockNormWritesTheResidual) {
  Graph g = build("qwen3-30b-a3b", {.seq = 128, .tp = 8, .layers = 1});
  fuse(g);
  expect_well_formed(g);
  const Node* norm = find_node(g, "layers.0.post_attention_layernorm");
  ASSERT_NE(norm, nullptr) << g.dump();
  EXPECT_EQ(norm->kind, OpKind::kNorm);
  EXPECT_TRUE(norm->residual_in);
  EXPECT_EQ(norm->outputs.size(), 2u);  // h (read by the MoE block's residual add), y
  const Node* moe = find_node(g, "layers.0.mlp");
  ASSERT_NE(moe, nullptr) << g.dump();
  EXPECT_EQ(moe->inputs[0], norm->outputs[1]);
  const std::vector<Step> steps = lower_steps(g, *moe);
  std::vector<std::string> parts;
  for (const Step& st : steps) parts.push_back(st.part);
  EXPECT_EQ(parts.front(), "router");
  EXPECT_NE(std::find(parts.begin(), parts.end(), "top-k"), parts.end());
  const auto experts = std::find_if(steps.begin(), steps.end(),
                                    [](const Step& st) { return st.part == "experts.gate_up"; });
  ASSERT_NE(experts, steps.end());
  EXPECT_EQ(experts->repeat, 128);
  EXPECT_EQ(experts->kernel.linear.tokens, 8);  // balanced: ceil(128 tokens x 8 / 128 experts)
  EXPECT_EQ(experts->kernel.linear.in, 2048);
  EXPECT_EQ(experts->kernel.linear.out, 96);  // 768 / 8 ranks
  EXPECT_EQ(experts->kernel.linear.act, ops::Act::kGluSilu);
}

// Without fuse(), every front-end operator lowers to a kernel of its own, except the rotary
// embeddings, which no kernel runs alone: lower() refuses them naming the node. A per-head
// norm is the norm kernel over tokens x heads rows of head_dim.
TEST(Fusion, UnfusedGraphLowersExceptRope) {
  for (const char* model : {"tiny-llama", "qwen3-8b"}) {
    SCOPED_TRACE(model);
    const Graph g = build(model, {.seq = 128, .tp = 1, .layers = 1});
    int refused = 0;
    for (const Node& n : g.nodes) {
      if (n.kind == OpKind::kRope) {
        try {
          lower(g, n);
          ADD_FAILURE() << n.name << " lowered";
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find(n.name), std::string::npos) << e.what();
          ++refused;
        }
        continue;
      }
      Kernel k;
      EXPECT_NO_THROW(k = lower(g, n)) << n.name;
      if (n.kind == OpKind::kAdd || n.kind == OpKind::kMul || n.kind == OpKind::kAct)
        EXPECT_EQ(k.kind, KernelKind::kElementwise) << n.name;
      if (n.kind == OpKind::kHeadNorm) {
        EXPECT_EQ(k.kind, KernelKind::kNorm) << n.name;
        EXPECT_EQ(k.norm.tokens, 128 * n.heads);
        EXPECT_EQ(k.norm.features, n.head_dim);
      }
    }
    EXPECT_EQ(refused, 2);
  }
}

// fuse(g, false), the unfused baseline: only the rope / q-k norms move into the attention (the
// kernels require it); every other front-end operator stays, and the graph lowers.
TEST(Fusion, BaselineFusesOnlyWhatTheKernelsRequire) {
  for (const char* model : {"tiny-llama", "qwen3-8b"}) {
    SCOPED_TRACE(model);
    Graph g = build(model, {.seq = 128, .tp = 1, .layers = 2});
    const int before = static_cast<int>(g.nodes.size());
    const int folded = count(g, OpKind::kRope) + count(g, OpKind::kHeadNorm);
    const int adds = count(g, OpKind::kAdd), norms = count(g, OpKind::kNorm),
              linears = count(g, OpKind::kLinear);
    const FusionReport r = fuse(g, false);
    EXPECT_EQ(r.nodes_before, before);
    EXPECT_EQ(r.nodes_after, before - folded);
    expect_well_formed(g);
    EXPECT_EQ(count(g, OpKind::kRope), 0);
    EXPECT_EQ(count(g, OpKind::kHeadNorm), 0);
    EXPECT_EQ(count(g, OpKind::kAdd), adds);
    EXPECT_EQ(count(g, OpKind::kNorm), norms);
    EXPECT_EQ(count(g, OpKind::kLinear), linears);
    for (const Node& n : g.nodes) {
      EXPECT_EQ(n.act == ops::Act::kNone || n.kind == OpKind::kAct, true) << n.name;
      EXPECT_FALSE(n.residual_in || n.residual_out) << n.name;
      if (n.kind == OpKind::kLinear) EXPECT_EQ(n.norm, ops::Norm::kNone) << n.name;
      if (n.kind == OpKind::kAttention) EXPECT_TRUE(n.rope) << n.name;
      EXPECT_NO_THROW(lower(g, n)) << n.name;
    }
  }
}

// Lowered kernels carry the fused attributes, and the same shapes in two layers give the
// same key (what the kernel cache counts on).
TEST(Fusion, LoweredKernelsCarryTheFusions) {
  Graph g = build("tiny-llama", {.seq = 128, .tp = 1});
  fuse(g);
  const Kernel mlp0 = lower(g, *find_node(g, "layers.0.mlp.gate_proj+up_proj"));
  const Kernel mlp1 = lower(g, *find_node(g, "layers.1.mlp.gate_proj+up_proj"));
  EXPECT_EQ(mlp0.kind, KernelKind::kLinear);
  EXPECT_EQ(mlp0.linear.tokens, 128);
  EXPECT_EQ(mlp0.linear.in, 256);
  EXPECT_EQ(mlp0.linear.out, 512);  // the GLU's width, not gate + up
  EXPECT_EQ(mlp0.linear.act, ops::Act::kGluSilu);
  EXPECT_TRUE(mlp0.linear.residual_in);
  EXPECT_EQ(mlp0.linear.norm, ops::Norm::kRms);
  EXPECT_DOUBLE_EQ(mlp0.flops(), 2.0 * 128 * 256 * 512 * 2);
  EXPECT_EQ(mlp0.key(), mlp1.key());
  const Kernel qkv = lower(g, *find_node(g, "layers.0.self_attn.q_proj+k_proj+v_proj"));
  EXPECT_EQ(qkv.linear.out, 512);  // 256 + 128 + 128
  EXPECT_FALSE(qkv.linear.residual_in);
  const Kernel qkv1 = lower(g, *find_node(g, "layers.1.self_attn.q_proj+k_proj+v_proj"));
  EXPECT_NE(qkv.key(), qkv1.key());  // layer 1's adds the residual
  const Kernel at = lower(g, *find_node(g, "layers.0.self_attn.attn"));
  EXPECT_EQ(at.kind, KernelKind::kAttention);
  EXPECT_TRUE(at.attention.rope);
  EXPECT_EQ(at.attention.q_heads, 4);
  EXPECT_EQ(at.attention.kv_heads, 2);
  EXPECT_DOUBLE_EQ(at.flops(), 4.0 * 4 * 64 * (128.0 * 129 / 2));
}

}  // namespace
}  // namespace trnsim::graph
