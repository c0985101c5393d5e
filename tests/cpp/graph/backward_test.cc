// Training graphs (graph/backward.h): the backward kernels each family's step gets, gradient
// sums and the tensor-parallel all-reduces of the input gradients, the optimizer state, the
// lowering of every training node, and the refusals.
#include "graph/backward.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "base/error.h"
#include "graph/build.h"
#include "graph/fusion.h"
#include "graph/graph_test_util.h"
#include "graph/lower.h"
#include "graph/model_config.h"
#include "graph/model_run.h"

namespace trnsim::graph {
namespace {

Graph train_graph(const char* model, BuildOptions o, TrainGraph* tg = nullptr) {
  Graph g = build_model_graph(load_model_config(model), o);
  fuse(g, true, true);
  const TrainGraph t = add_training(g, {});
  if (tg) *tg = t;
  return g;
}

int count(const Graph& g, OpKind k) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.kind == k; }));
}

TEST(Backward, LlamaStepHasEveryBackwardKernel) {
  TrainGraph tg;
  const Graph g = train_graph("tiny-llama", {.seq = 128, .tp = 1}, &tg);
  // Per layer: q+k+v, o, gate+up, down; and the LM head.
  EXPECT_EQ(count(g, OpKind::kLinearGradWeight), 2 * 4 + 1);
  EXPECT_EQ(count(g, OpKind::kLinearGradInput), 2 * 4 + 1);
  EXPECT_EQ(count(g, OpKind::kAttentionGrad), 2);
  EXPECT_EQ(count(g, OpKind::kNormGrad), 2 * 2 + 1);
  EXPECT_EQ(count(g, OpKind::kActGrad), 2);  // one GLU backward per MLP
  EXPECT_EQ(count(g, OpKind::kEmbeddingGrad), 1);
  EXPECT_EQ(count(g, OpKind::kCrossEntropy), 1);
  EXPECT_EQ(count(g, OpKind::kAllReduce), 0);
  // Every weight gets its gradient and one optimizer step with three fp32 state tensors.
  int weights = 0;
  for (const Value& v : g.values) weights += v.kind == ValueKind::kWeight;
  EXPECT_EQ(static_cast<int>(tg.weight_grads.size()), weights);
  EXPECT_EQ(count(g, OpKind::kAdamW), weights);
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kAdamW) {
      ASSERT_EQ(n.state.size(), 4u);
      for (size_t j = 1; j < 4; ++j) {
        const Value& s = g.values[static_cast<size_t>(n.state[j])];
        EXPECT_EQ(s.kind, ValueKind::kOptState);
        EXPECT_EQ(s.dtype.name(), "fp32");
        EXPECT_EQ(s.shape, g.values[static_cast<size_t>(n.state[0])].shape);
      }
    }
  // The forward attention saves its softmax statistics; the norms before the linears stay
  // their own kernels (their outputs are the weight gradients' inputs).
  for (const Node& n : g.nodes) {
    if (n.kind == OpKind::kAttention) {
      EXPECT_EQ(n.outputs.size(), 2u);
      EXPECT_TRUE(lower(g, n).attention.save_lse);
    }
    if (n.kind == OpKind::kLinear) {
      EXPECT_EQ(n.norm, ops::Norm::kNone) << n.name;
      EXPECT_EQ(n.act, ops::Act::kNone) << n.name;
    }
  }
  // The loss is the only output; the logits are an activation now.
  int outputs = 0;
  for (const Value& v : g.values) outputs += v.kind == ValueKind::kOutput;
  EXPECT_EQ(outputs, 1);
  EXPECT_EQ(g.values[static_cast<size_t>(tg.loss)].name, "loss");
}

TEST(Backward, EveryTrainingNodeLowersToItsKernel) {
  for (const char* model : {"tiny-llama", "qwen3-8b", "gpt3-6.7b"}) {
    SCOPED_TRACE(model);
    const Graph g = train_graph(model, {.seq = 256, .tp = 1, .layers = 1});
    std::set<std::string> kinds;
    for (const Node& n : g.nodes) {
      const Kernel k = lower(g, n);
      kinds.insert(std::string(k.kind_name()));
      EXPECT_FALSE(k.key().empty());
      EXPECT_FALSE(k.describe().empty());
      if (n.kind == OpKind::kLinearGradInput || n.kind == OpKind::kLinearGradWeight)
        EXPECT_GT(k.flops(), 0) << n.name;
    }
    for (const char* want : {"grad_input", "grad_weight", "attn_grad", "norm_grad", "act_grad",
                             "embed_grad", "loss", "adamw"})
      EXPECT_TRUE(kinds.contains(want)) << want;
  }
}

// Eager attention: the forward saves its probabilities ([B Hq S, S], the model's dtype) and
// the backward reads them in place of the output and lse; both kernels are the eager ones, and
// their cache keys differ from flash attention's. A KV cache is refused with it.
TEST(Backward, EagerAttentionSavesItsProbabilities) {
  const Graph g = train_graph("tiny-llama", {.seq = 128, .tp = 2, .eager_attention = true});
  const Graph flash = train_graph("tiny-llama", {.seq = 128, .tp = 2});
  int grads = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.kind == OpKind::kAttention) {
      ASSERT_EQ(n.outputs.size(), 2u);
      const Value& p = g.values[static_cast<size_t>(n.outputs[1])];
      EXPECT_TRUE(p.name.ends_with(".attn.probs")) << p.name;
      EXPECT_EQ(p.shape, (std::vector<int64_t>{2 * 128, 128}));  // 2 heads a rank
      EXPECT_TRUE(lower(g, n).attention.eager);
      EXPECT_NE(lower(g, n).key(), lower(flash, flash.nodes[i]).key());
    }
    if (n.kind == OpKind::kAttentionGrad) {
      ++grads;
      EXPECT_EQ(n.ports,
                (std::vector<std::string>{"q", "k", "v", "dout", "probs", "dq", "dk", "dv"}));
      EXPECT_TRUE(lower(g, n).attention.eager);
    }
  }
  EXPECT_EQ(grads, 2);
  EXPECT_THROW(build_model_graph(load_model_config("tiny-llama"),
                                 {.seq = 1, .kv_cache = true, .past = 8, .eager_attention = true}),
               InputError);
}

// Sequence parallelism: the residual stream, the norms and the residual adds hold a rank's
// shard of the tokens; an all-gather before each column-parallel block and a reduce-scatter
// after each row-parallel one replace the all-reduces, in the backward the other way round;
// each norm's weight gradient (a sum over the rank's shard) is all-reduced; the graph
// validates; the kernels run on the shard's rows.
TEST(Backward, SequenceParallelShardsTheTokensBetweenBlocks) {
  const BuildOptions o{.seq = 128, .tp = 4, .sequence_parallel = true};
  Graph fwd = build_model_graph(load_model_config("tiny-llama"), o);
  EXPECT_NO_THROW(fwd.validate());
  EXPECT_EQ(count(fwd, OpKind::kAllReduce), 0);
  EXPECT_EQ(count(fwd, OpKind::kAllGather), 2 * 2 + 1);  // attention, mlp a layer; lm head
  EXPECT_EQ(count(fwd, OpKind::kReduceScatter), 2 * 2);  // o_proj, down_proj a layer
  for (const Node& n : fwd.nodes)
    if (n.kind == OpKind::kNorm) {
      EXPECT_EQ(fwd.values[static_cast<size_t>(n.outputs[0])].shape[0], 128 / 4) << n.name;
      EXPECT_EQ(lower(fwd, n).norm.tokens, 128 / 4);
    }
  TrainGraph tg;
  const Graph g = train_graph(
      "tiny-llama", {.seq = 128, .tp = 4, .vocab_parallel = true, .sequence_parallel = true}, &tg);
  // Backward: each forward reduce-scatter's gradient is all-gathered, each all-gather's
  // reduce-scattered; the embedding's vocabulary-split sum reduce-scatters too.
  int ag = 0, rs = 0, norm_ar = 0, other_ar = 0, regather = 0;
  for (const Node& n : g.nodes) {
    const bool grad = n.name.ends_with(".grad");
    if (n.kind == OpKind::kAllGather && grad) ++ag;
    if (n.kind == OpKind::kAllGather && n.name.ends_with(".regather")) ++regather;
    if (n.kind == OpKind::kReduceScatter && grad) ++rs;
    if (n.kind == OpKind::kAllReduce)
      ++(n.name.ends_with("weight.grad_all_reduce") ? norm_ar : other_ar);
    if (n.kind == OpKind::kNormGrad) EXPECT_EQ(lower(g, n).norm_grad.tokens, 128 / 4) << n.name;
  }
  EXPECT_EQ(ag, 2 * 2 + 1);       // o_proj, down_proj, embedding
  EXPECT_EQ(rs, 2 * 2 + 1);       // attention, mlp, lm head
  EXPECT_EQ(norm_ar, 2 * 2 + 1);  // two norms a layer and the final one
  EXPECT_EQ(other_ar, 0);         // no input gradient is all-reduced any more
  // The forward keeps the shards: each gathered input is gathered again for its x^T dy.
  EXPECT_EQ(regather, 2 * 2 + 1);
  for (int v : saved_activations(g))
    EXPECT_FALSE(g.values[static_cast<size_t>(v)].name.ends_with(".all_gather"))
        << g.values[static_cast<size_t>(v)].name;
  // Refused: a KV cache, and tokens that do not split over the ranks.
  EXPECT_THROW(build_model_graph(
                   load_model_config("tiny-llama"),
                   {.seq = 1, .tp = 4, .kv_cache = true, .past = 8, .sequence_parallel = true}),
               InputError);
  EXPECT_THROW(build_model_graph(load_model_config("tiny-llama"),
                                 {.seq = 130, .tp = 4, .sequence_parallel = true}),
               InputError);
}

// Qwen3's per-head q / k norms stay norm kernels over tokens x heads rows when training, with
// their backward over the same rows.
TEST(Backward, HeadNormsKeepTheirOwnKernels) {
  const Graph g = train_graph("qwen3-8b", {.seq = 128, .tp = 8, .layers = 1});
  EXPECT_EQ(count(g, OpKind::kHeadNorm), 2);
  int head_grads = 0;
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kNormGrad && (has(n.name, "q_norm") || has(n.name, "k_norm"))) {
      ++head_grads;
      const Kernel k = lower(g, n);
      // 32 q heads and 8 kv heads over 8 ranks: 4 q heads, 1 kv head per rank.
      EXPECT_EQ(k.norm_grad.tokens, 128 * (has(n.name, "q_norm") ? 4 : 1)) << n.name;
      EXPECT_EQ(k.norm_grad.features, 128);  // head_dim
    }
  EXPECT_EQ(head_grads, 2);
}

// Column-parallel linears' input gradients are partial sums: one all-reduce per input they
// share (q+k+v's, gate+up's, the LM head's), none for the row-parallel ones.
TEST(Backward, TensorParallelInputGradientsAreAllReduced) {
  const Graph g = train_graph("tiny-llama", {.seq = 128, .tp = 2});
  int grad_reduces = 0;
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kAllReduce && has(n.name, ".grad_all_reduce")) ++grad_reduces;
  EXPECT_EQ(grad_reduces, 2 * 2 + 1);
}

// BERT pretrains through its masked-LM head (BertForPreTraining's cls.predictions: dense,
// activation, LayerNorm, decoder to the vocabulary with bias), whose logits the loss reads.
TEST(Backward, BertTrainsThroughItsMaskedLmHead) {
  const ModelConfig bert = load_model_config("bert-large");
  const Graph g = train_graph("bert-large", {.seq = 128, .tp = 1, .layers = 2, .mlm_head = true});
  int head_linears = 0, losses = 0;
  for (const Node& n : g.nodes) {
    if (n.kind == OpKind::kLinear && has(n.name, "cls.predictions.")) {
      ++head_linears;
      EXPECT_FALSE(n.biases.empty()) << n.name;
    }
    if (n.kind == OpKind::kCrossEntropy) {
      ++losses;
      EXPECT_EQ(g.values[static_cast<size_t>(n.inputs[0])].shape,
                (std::vector<int64_t>{128, bert.vocab}));
    }
  }
  EXPECT_EQ(head_linears, 2);  // the transform's dense and the decoder
  EXPECT_EQ(losses, 1);
}

// A linear's backward computes grad-input before grad-weight (Megatron's and NxD's order), so
// the collective on grad-input runs beside the grad-weight matmul: in a TP=2 training step of
// a few layers that collective time is under compute and the latency is less than the sum of
// its kernels.
TEST(Backward, GradInputBeforeGradWeightSoItsCollectiveOverlaps) {
  const Graph g = train_graph("tiny-llama", {.seq = 128, .tp = 2});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.kind != OpKind::kLinearGradWeight) continue;
    const std::string lin = n.name.substr(0, n.name.rfind(".grad_weight"));
    for (size_t j = i + 1; j < g.nodes.size(); ++j)
      EXPECT_NE(g.nodes[j].name, lin + ".grad_input") << "after " << n.name;
  }
  const ModelResult r = run_model(load_model_config("tiny-llama"),
                                  {.chip = "trn2", .tp = 2, .seq = 128, .train = true});
  double kernels_us = 0, exposed_us = 0;
  for (const auto& sl : r.timeline) {
    kernels_us += sl.dur_us;
    exposed_us += sl.exposed_us;
    EXPECT_LE(sl.exposed_us, sl.dur_us + 1e-9) << sl.name;
  }
  EXPECT_GT(r.overlapped_us, 0);
  EXPECT_NEAR(kernels_us - exposed_us, r.overlapped_us, 1e-6 * kernels_us);
  EXPECT_NEAR(r.latency_us - r.launch_us, exposed_us, 1e-6 * kernels_us);
}

// The residual stream's gradient reaches each pre-norm as dres (folded into the norm's
// backward rather than summed by an add kernel): the input norms of every layer and the final
// norm take it; the post-attention norms, which write the residual sum, give theirs to both
// addends.
TEST(Backward, ResidualGradientsFoldIntoTheNorms) {
  const Graph g = train_graph("tiny-llama", {.seq = 128, .tp = 1});
  int with_dres = 0, norms = 0;
  for (const Node& n : g.nodes) {
    if (n.kind != OpKind::kNormGrad) continue;
    ++norms;
    const bool dres = std::find(n.ports.begin(), n.ports.end(), "dres") != n.ports.end();
    with_dres += dres;
    if (has(n.name, "input_layernorm")) EXPECT_TRUE(dres) << n.name;
  }
  EXPECT_EQ(norms, 5);
  EXPECT_GE(with_dres, 2);
  for (const Node& n : g.nodes)
    EXPECT_FALSE(n.kind == OpKind::kAdd && has(n.name, ".grad_sum")) << n.name;
}

// A MoE block's backward: one node reading x, dy and the five tensors its forward saved,
// writing dx (a partial sum over the TP ranks: all-reduced) and a gradient per weight, each
// of which gets its optimizer step.
TEST(Backward, MoeBlocksGetTheirBackward) {
  TrainGraph tg;
  const Graph g = train_graph("tiny-qwen3-moe", {.seq = 64, .tp = 2}, &tg);
  const ModelConfig m = load_model_config("tiny-qwen3-moe");
  ASSERT_EQ(count(g, OpKind::kMoeGrad), m.layers);
  int weights = 0;
  for (const Value& v : g.values) weights += v.kind == ValueKind::kWeight;
  EXPECT_EQ(static_cast<int>(tg.weight_grads.size()), weights);
  EXPECT_EQ(count(g, OpKind::kAdamW), weights);
  for (const Node& n : g.nodes) {
    if (n.kind == OpKind::kMoe) {
      ASSERT_EQ(n.outputs.size(), 6u);  // y, then probs, dispatched, gate_up, act, expert_out
      const Value& gate_up = g.values[static_cast<size_t>(n.outputs[3])];
      EXPECT_EQ(gate_up.shape[0], 64 * m.experts_per_token);
      EXPECT_EQ(gate_up.shape[1], 2 * m.expert_intermediate / 2);
    }
    if (n.kind != OpKind::kMoeGrad) continue;
    EXPECT_EQ(n.inputs.size(), 2u + 5u);
    EXPECT_EQ(n.outputs.size(), 1 + n.weights.size());
    // The backward's kernels: the forward's in reverse, the experts' ones per active expert.
    std::set<std::string> parts;
    double expert_flops = 0;
    for (const Step& st : lower_steps(g, n)) {
      parts.insert(st.part);
      if (st.part.starts_with("experts.") && st.kernel.kind != KernelKind::kActGrad)
        expert_flops += st.kernel.flops() * static_cast<double>(st.repeat);
    }
    for (const char* want :
         {"combine.grad_gather", "experts.down.grad_input", "experts.down.grad_weight",
          "experts.act_grad", "experts.gate_up.grad_input", "experts.gate_up.grad_weight",
          "dispatch.grad", "router.grad_input", "router.grad_weight"})
      EXPECT_TRUE(parts.contains(want)) << want;
    // Twice the forward experts' matmul FLOPs (dx and dw of each of the three projections).
    const Node& fwd = g.nodes[static_cast<size_t>(g.producer(n.inputs[2]))];
    double fwd_flops = 0;
    for (const Step& st : lower_steps(g, fwd))
      if (st.part.starts_with("experts."))
        fwd_flops += st.kernel.flops() * static_cast<double>(st.repeat);
    EXPECT_NEAR(expert_flops, 2 * fwd_flops, 1e-6 * fwd_flops) << n.name;
  }
  // Per layer q+k+v's input gradient and the MoE block's; the LM head's.
  int grad_reduces = 0;
  for (const Node& n : g.nodes)
    grad_reduces += n.kind == OpKind::kAllReduce && has(n.name, ".grad_all_reduce");
  EXPECT_EQ(grad_reduces, 2 * m.layers + 1);
}

TEST(Backward, Refusals) {
  Graph cached = build_model_graph(load_model_config("tiny-llama"),
                                   {.seq = 1, .tp = 1, .kv_cache = true, .past = 16});
  fuse(cached, true, true);
  EXPECT_TRUE(has(input_error([&] { add_training(cached, {}); }).what(), "KV cache"));
}

}  // namespace
}  // namespace trnsim::graph
