// Building a model family's graph (graph/build.h): the options it refuses, and the shapes of
// one tensor-parallel rank (Megatron-style sharding with an all-reduce after each row-parallel
// linear).
#include "graph/build.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "graph/model_config.h"
#include "graph_test_util.h"

namespace trnsim::graph {
namespace {

const Value* find_value(const Graph& g, const std::string& name) {
  for (const Value& v : g.values)
    if (v.name == name) return &v;
  return nullptr;
}

int count(const Graph& g, OpKind k) {
  return static_cast<int>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.kind == k; }));
}

TEST(BuildGraph, TpThatDoesNotDivideTheHeadsIsRefused) {
  const ModelConfig m = load_model_config("llama-3.1-8b");
  const InputError e = input_error([&] { build_model_graph(m, {.tp = 3}); });
  EXPECT_EQ(e.key(), "tp");
  EXPECT_TRUE(has(e.what(), "tp")) << e.what();
  EXPECT_TRUE(has(e.what(), "heads")) << e.what();
  EXPECT_EQ(input_error([&] { build_model_graph(m, {.tp = 0}); }).key(), "tp");
  // 24 heads over 4 ranks divide, but 6 kv heads neither divide by 4 nor divide 4.
  const ModelConfig odd = parse_model_config(
      R"({"model_type": "llama", "hidden_size": 1536, "num_hidden_layers": 1,
          "num_attention_heads": 24, "num_key_value_heads": 6, "intermediate_size": 3072,
          "vocab_size": 1024})",
      "odd.json");
  const InputError kv = input_error([&] { build_model_graph(odd, {.tp = 4}); });
  EXPECT_EQ(kv.key(), "tp");
  EXPECT_TRUE(has(kv.what(), "kv heads")) << kv.what();
  EXPECT_NO_THROW(build_model_graph(odd, {.tp = 3}));  // 8 q heads and 2 kv heads per rank
}

// A multi-head model whose heads tp does not divide is padded to the next multiple of tp when
// asked (inference, as Neuron's get_number_of_extra_heads pads): Llama-2 13B's 40 heads over
// 32 ranks run as 64, two q and two kv heads a rank; o_proj reads their 256 columns. A GQA
// model is not padded, and neither is anything unasked.
TEST(BuildGraph, MultiHeadModelPaddedToAMultipleOfTp) {
  const ModelConfig m = load_model_config("llama-2-13b");
  const Graph g = build_model_graph(m, {.tp = 32, .layers = 1, .pad_heads = true});
  int attention = 0;
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kAttention) {
      ++attention;
      EXPECT_EQ(n.heads, 2);
      EXPECT_EQ(n.kv_heads, 2);
    }
  EXPECT_EQ(attention, 1);
  EXPECT_EQ(find_value(g, "layers.0.self_attn.q_proj.weight")->shape,
            (std::vector<int64_t>{5120, 256}));
  EXPECT_EQ(find_value(g, "layers.0.self_attn.o_proj.weight")->shape,
            (std::vector<int64_t>{256, 5120}));
  // Divisible: nothing padded (40 heads over 8 ranks: 5 a rank).
  for (const Node& n : build_model_graph(m, {.tp = 8, .layers = 1, .pad_heads = true}).nodes)
    if (n.kind == OpKind::kAttention) EXPECT_EQ(n.heads, 5);
  // Unasked (a training step) the 40 heads refuse 32 ranks.
  EXPECT_EQ(input_error([&] { build_model_graph(m, {.tp = 32, .layers = 1}); }).key(), "tp");
  // GQA (32 heads, 8 kv heads) over 12 ranks: refused even when asked, saying why.
  const InputError gqa = input_error([&] {
    build_model_graph(load_model_config("llama-3.1-8b"),
                      {.tp = 12, .layers = 1, .pad_heads = true});
  });
  EXPECT_EQ(gqa.key(), "tp");
  EXPECT_TRUE(has(gqa.what(), "kv head")) << gqa.what();
}

// More ranks than kv heads: each rank keeps one kv head (replicated), its q heads still
// reading theirs. Llama 3.1 8B over 16 ranks: 2 q heads and 1 kv head (of 8) per rank.
TEST(BuildGraph, KvHeadsReplicatedWhenRanksOutnumberThem) {
  const Graph g = build_model_graph(load_model_config("llama-3.1-8b"), {.tp = 16, .layers = 1});
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kAttention) {
      EXPECT_EQ(n.heads, 2);
      EXPECT_EQ(n.kv_heads, 1);
    }
  EXPECT_EQ(find_value(g, "layers.0.self_attn.q_proj.weight")->shape,
            (std::vector<int64_t>{4096, 256}));
  EXPECT_EQ(find_value(g, "layers.0.self_attn.k_proj.weight")->shape,
            (std::vector<int64_t>{4096, 128}));
}

// Every layer of a MoE model is a sparse block: router, top-k, each expert's GLU MLP with its
// intermediate columns split over the ranks, then the all-reduce and the residual add.
TEST(BuildGraph, MixtureOfExpertsBlocks) {
  const ModelConfig m = load_model_config("qwen3-30b-a3b");  // 128 experts, 8 per token
  const Graph g = build_model_graph(m, {.seq = 128, .tp = 8, .layers = 2});
  EXPECT_EQ(count(g, OpKind::kMoe), 2);
  EXPECT_EQ(count(g, OpKind::kAllReduce), 4);
  const Node& moe = *std::find_if(g.nodes.begin(), g.nodes.end(),
                                  [](const Node& n) { return n.kind == OpKind::kMoe; });
  EXPECT_EQ(moe.experts, 128);
  EXPECT_EQ(moe.top_k, 8);
  EXPECT_EQ(moe.act, ops::Act::kGluSilu);
  ASSERT_EQ(moe.weights.size(), 1u + 3u * 128u);
  using S = std::vector<int64_t>;
  EXPECT_EQ(g.values[static_cast<size_t>(moe.weights[0])].shape, (S{2048, 128}));  // router
  EXPECT_EQ(find_value(g, "layers.0.mlp.experts.0.gate_proj.weight")->shape, (S{2048, 96}));
  EXPECT_EQ(find_value(g, "layers.1.mlp.experts.127.down_proj.weight")->shape, (S{96, 2048}));
  EXPECT_EQ(find_value(g, "layers.0.mlp.gate_proj.weight"), nullptr);  // no dense MLP
  for (const char* name : {"mixtral-8x7b", "gpt-oss-120b"}) {
    SCOPED_TRACE(name);
    const Graph o = build_model_graph(load_model_config(name), {.tp = 8, .layers = 1});
    EXPECT_EQ(count(o, OpKind::kMoe), 1);
  }
}

TEST(BuildGraph, ExpertParallelRanksHoldWholeExperts) {
  // ep 8 of tp 8: each rank 16 of the 128 experts at their full 768 columns (the same bytes as
  // 128 experts of 96 columns), the router still over all 128; the lowering runs 16 experts.
  const ModelConfig m = load_model_config("qwen3-30b-a3b");
  const Graph g = build_model_graph(m, {.seq = 128, .tp = 8, .layers = 1, .ep = 8});
  const Node& moe = *std::find_if(g.nodes.begin(), g.nodes.end(),
                                  [](const Node& n) { return n.kind == OpKind::kMoe; });
  EXPECT_EQ(moe.experts, 128);
  EXPECT_EQ(moe.expert_ranks, 8);
  ASSERT_EQ(moe.weights.size(), 1u + 3u * 16u);
  using S = std::vector<int64_t>;
  EXPECT_EQ(g.values[static_cast<size_t>(moe.weights[0])].shape, (S{2048, 128}));
  EXPECT_EQ(find_value(g, "layers.0.mlp.experts.15.gate_proj.weight")->shape, (S{2048, 768}));
  EXPECT_EQ(find_value(g, "layers.0.mlp.experts.16.gate_proj.weight"), nullptr);
  // ep 2 of tp 8: 64 experts of 192 columns.
  const Graph h = build_model_graph(m, {.seq = 128, .tp = 8, .layers = 1, .ep = 2});
  EXPECT_EQ(find_value(h, "layers.0.mlp.experts.63.up_proj.weight")->shape, (S{2048, 192}));
  EXPECT_EQ(find_value(h, "layers.0.mlp.experts.64.up_proj.weight"), nullptr);
  // What ep must divide, each refusal naming the key.
  EXPECT_EQ(input_error([&] { build_model_graph(m, {.tp = 4, .layers = 1, .ep = 8}); }).key(),
            "ep");
  EXPECT_EQ(input_error([&] { build_model_graph(m, {.tp = 8, .layers = 1, .ep = 3}); }).key(),
            "ep");
  EXPECT_EQ(input_error([&] {
              build_model_graph(load_model_config("tiny-llama"), {.tp = 2, .layers = 1, .ep = 2});
            }).key(),
            "ep");
  EXPECT_TRUE(splits_into(m, 8, 8));
  EXPECT_FALSE(splits_into(m, 8, 3));
  EXPECT_FALSE(splits_into(load_model_config("tiny-llama"), 2, 2));
  // Across 4 data-parallel replicas too (training): 128 / (8 x 4) = 4 whole experts a rank.
  const Graph w = build_model_graph(m, {.seq = 128, .tp = 8, .layers = 1, .ep = 8, .expert_dp = 4});
  EXPECT_EQ(find_value(w, "layers.0.mlp.experts.3.down_proj.weight")->shape, (S{768, 2048}));
  EXPECT_EQ(find_value(w, "layers.0.mlp.experts.4.down_proj.weight"), nullptr);
  EXPECT_EQ(input_error([&] {
              build_model_graph(m, {.tp = 8, .layers = 1, .ep = 8, .expert_dp = 32});
            }).key(),
            "expert_dp");
}

// An EAGLE draft head: the fc over [embedding, target hidden] as two row-parallel halves
// (each rank's H / tp columns of the embedding and of the hidden state), all-reduced, then the
// target's decoder layer, final norm and LM head.
TEST(BuildGraph, EagleDraftHead) {
  const ModelConfig target = load_model_config("llama-3.1-8b");
  const ModelConfig d = eagle_draft_of(target);
  EXPECT_EQ(d.name, "llama-3.1-8b-eagle");
  EXPECT_EQ(d.layers, 1);
  using S = std::vector<int64_t>;
  const Graph g = build_model_graph(d, {.seq = 4, .tp = 8});
  EXPECT_EQ(find_value(g, "target_hidden")->shape, (S{4, 512}));
  EXPECT_EQ(find_value(g, "target_hidden")->kind, ValueKind::kInput);
  EXPECT_EQ(find_value(g, "embed_tokens.weight")->shape, (S{target.vocab, 512}));
  EXPECT_EQ(find_value(g, "fc.embed.weight")->shape, (S{512, 4096}));
  EXPECT_EQ(find_value(g, "fc.hidden.weight")->shape, (S{512, 4096}));
  EXPECT_NE(find_value(g, "fc.all_reduce"), nullptr);
  EXPECT_NE(find_value(g, "layers.0.mlp.down_proj.weight"), nullptr);
  EXPECT_EQ(find_value(g, "layers.1.mlp.down_proj.weight"), nullptr);
  EXPECT_NE(find_value(g, "lm_head.weight"), nullptr);
  ModelConfig one_layer = target;
  one_layer.layers = 1;
  EXPECT_EQ(d.params() - one_layer.params(), 2 * 4096 * 4096);  // the fc
  // A MoE target's head is a dense layer; a model without rotary positions has none.
  EXPECT_FALSE(eagle_draft_of(load_model_config("qwen3-30b-a3b")).moe());
  EXPECT_EQ(input_error([&] { eagle_draft_of(load_model_config("gpt3-6.7b")); }).key(), "eagle");
}

TEST(BuildGraph, LayersOutsideTheModelAreRefused) {
  const ModelConfig m = load_model_config("tiny-llama");
  const InputError zero = input_error([&] { build_model_graph(m, {.tp = 1, .layers = 0}); });
  EXPECT_EQ(zero.key(), "layers");
  const InputError more = input_error([&] { build_model_graph(m, {.tp = 1, .layers = 3}); });
  EXPECT_EQ(more.key(), "layers");
  EXPECT_EQ(input_error([&] { build_model_graph(m, {.seq = 0, .tp = 1}); }).key(), "seq");
  EXPECT_EQ(input_error([&] { build_model_graph(m, {.batch = 0, .tp = 1}); }).key(), "batch");
}

TEST(BuildGraph, SequenceBeyondLearnedPositionsIsRefused) {
  const ModelConfig bert = load_model_config("bert-large");  // 512 learned positions
  const InputError e = input_error([&] { build_model_graph(bert, {.seq = 1024, .tp = 1}); });
  EXPECT_EQ(e.key(), "seq");
  EXPECT_TRUE(has(e.what(), "512")) << e.what();
  EXPECT_NO_THROW(build_model_graph(bert, {.seq = 512, .tp = 1, .layers = 1}));
  // RoPE models have no such table: a sequence past max_position_embeddings still builds.
  EXPECT_NO_THROW(
      build_model_graph(load_model_config("tiny-llama"), {.seq = 4096, .tp = 1, .layers = 1}));
}

// Llama 3.1 8B over 8 ranks: 32 / 8 = 4 q heads and 8 / 8 = 1 kv head of 128 per rank,
// 14336 / 8 = 1792 MLP columns, 128256 / 8 = 16032 vocabulary columns.
TEST(BuildGraph, TensorParallelShardsAndAllReduces) {
  const ModelConfig m = load_model_config("llama-3.1-8b");
  const Graph g = build_model_graph(m, {.batch = 1, .seq = 128, .tp = 8});
  EXPECT_EQ(g.tp, 8);
  EXPECT_EQ(g.seq, 128);
  EXPECT_EQ(count(g, OpKind::kAllReduce), 2 * 32);  // after o_proj and down_proj
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kAllReduce) {
      const bool after_row_parallel =
          n.name.ends_with("self_attn.all_reduce") || n.name.ends_with("mlp.all_reduce");
      EXPECT_TRUE(after_row_parallel) << n.name;
      EXPECT_EQ(g.values[static_cast<size_t>(n.inputs[0])].shape,
                (std::vector<int64_t>{128, 4096}));
    }
  auto shape = [&](const std::string& name) {
    const Value* v = find_value(g, name);
    EXPECT_NE(v, nullptr) << name;
    return v != nullptr ? v->shape : std::vector<int64_t>{};
  };
  using S = std::vector<int64_t>;
  EXPECT_EQ(shape("layers.0.self_attn.q_proj.weight"), (S{4096, 512}));
  EXPECT_EQ(shape("layers.0.self_attn.k_proj.weight"), (S{4096, 128}));
  EXPECT_EQ(shape("layers.0.self_attn.v_proj.weight"), (S{4096, 128}));
  EXPECT_EQ(shape("layers.31.self_attn.o_proj.weight"), (S{512, 4096}));
  EXPECT_EQ(shape("layers.0.mlp.gate_proj.weight"), (S{4096, 1792}));
  EXPECT_EQ(shape("layers.0.mlp.down_proj.weight"), (S{1792, 4096}));
  EXPECT_EQ(shape("lm_head.weight"), (S{4096, 16032}));
  EXPECT_EQ(shape("embed_tokens.weight"), (S{128256, 4096}));  // replicated
  EXPECT_EQ(shape("layers.0.input_layernorm.weight"), (S{4096}));
  for (const Node& n : g.nodes)
    if (n.kind == OpKind::kAttention) {
      EXPECT_EQ(n.heads, 4);
      EXPECT_EQ(n.kv_heads, 1);
      EXPECT_EQ(n.head_dim, 128);
      EXPECT_TRUE(n.causal);
    }
  // One rank's weights are about 1/8 of the model's, the embedding (replicated) aside.
  int64_t elements = 0;
  for (const Value& v : g.values)
    if (v.kind == ValueKind::kWeight && v.name != "embed_tokens.weight") elements += v.elements();
  const double sharded = static_cast<double>(m.params() - m.vocab * m.hidden) / 8;
  EXPECT_NEAR(static_cast<double>(elements) / sharded, 1.0, 0.01);
  // tp 1 has no collectives.
  EXPECT_EQ(count(build_model_graph(m, {.tp = 1, .layers = 2}), OpKind::kAllReduce), 0);
}

// The front end's operators for a Llama layer, in execution order, and the output value.
TEST(BuildGraph, LlamaLayerIsTheHuggingFaceModule) {
  const Graph g = build_model_graph(load_model_config("tiny-llama"), {.seq = 64, .tp = 1});
  ASSERT_EQ(g.nodes.size(), 35u);  // embedding + 2 x 16 + final norm + lm_head
  std::vector<std::string> layer0;
  for (const Node& n : g.nodes)
    if (n.repeat_of == 0) layer0.push_back(n.name);
  const std::vector<std::string> want{
      "layers.0.input_layernorm",  "layers.0.self_attn.q_proj",
      "layers.0.self_attn.k_proj", "layers.0.self_attn.v_proj",
      "layers.0.self_attn.rope_q", "layers.0.self_attn.rope_k",
      "layers.0.self_attn.attn",   "layers.0.self_attn.o_proj",
      "layers.0.attn_residual",    "layers.0.post_attention_layernorm",
      "layers.0.mlp.gate_proj",    "layers.0.mlp.up_proj",
      "layers.0.mlp.act_fn",       "layers.0.mlp.gate_mul",
      "layers.0.mlp.down_proj",    "layers.0.mlp_residual"};
  EXPECT_EQ(layer0, want);
  EXPECT_EQ(g.nodes.front().kind, OpKind::kEmbedding);
  EXPECT_EQ(g.nodes.back().name, "lm_head");
  const Value& out = g.values[static_cast<size_t>(g.nodes.back().outputs[0])];
  EXPECT_EQ(out.kind, ValueKind::kOutput);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{64, 1024}));
  // Norm scales and biases are fp32 (the kernels' gamma / b), matrices bf16.
  EXPECT_EQ(find_value(g, "norm.weight")->dtype.name(), num::fp32().name());
  EXPECT_EQ(find_value(g, "lm_head.weight")->dtype.name(), num::bf16().name());
}

}  // namespace
}  // namespace trnsim::graph
