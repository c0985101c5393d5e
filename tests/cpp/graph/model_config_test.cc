// Model configs (graph/model_config.h): every built-in Hugging Face config.json in spec/models
// parses, the parameter counts of well-known models come out near their published sizes, and
// a malformed config is refused with an InputError that names the offending key.
#include "graph/model_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "graph_test_util.h"

namespace trnsim::graph {
namespace {

// What `f` throws, as the InputError it must be (a test failure otherwise).
TEST(ModelConfig, EveryBuiltInConfigParses) {
  const std::vector<std::string> names = list_models();
  ASSERT_FALSE(names.empty());
  // list_models is exactly the .json files of spec/models, sorted.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(arch::spec_dir() / "models"))
    if (e.path().extension() == ".json") files.push_back(e.path().stem().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(names, files);
  for (const char* must : {"llama-3.1-8b", "tiny-llama", "bert-large", "qwen3-32b"})
    EXPECT_NE(std::find(names.begin(), names.end(), must), names.end()) << must;
  for (const std::string& n : names) {
    SCOPED_TRACE(n);
    ModelConfig m;
    ASSERT_NO_THROW(m = load_model_config(n));
    EXPECT_EQ(m.name, n);
    EXPECT_FALSE(m.source.empty());
    EXPECT_GT(m.hidden, 0);
    EXPECT_GT(m.layers, 0);
    EXPECT_GT(m.heads, 0);
    EXPECT_GT(m.kv_heads, 0);
    EXPECT_EQ(m.heads % m.kv_heads, 0);
    EXPECT_GT(m.head_dim, 0);
    EXPECT_GT(m.vocab, 0);
    EXPECT_GT(m.params(), 0);
    EXPECT_EQ(m.moe(), m.experts > 0);
  }
}

// Families set the attributes their Hugging Face modules have.
TEST(ModelConfig, FamiliesSetTheirArchitecture) {
  const ModelConfig llama = load_model_config("llama-3.1-8b");
  EXPECT_EQ(llama.model_type, "llama");
  EXPECT_EQ(llama.hidden, 4096);
  EXPECT_EQ(llama.layers, 32);
  EXPECT_EQ(llama.heads, 32);
  EXPECT_EQ(llama.kv_heads, 8);
  EXPECT_EQ(llama.head_dim, 128);
  EXPECT_EQ(llama.intermediate, 14336);
  EXPECT_EQ(llama.vocab, 128256);
  EXPECT_EQ(llama.norm, ops::Norm::kRms);
  EXPECT_EQ(llama.mlp_act, ops::Act::kGluSilu);
  EXPECT_TRUE(llama.rope);
  EXPECT_DOUBLE_EQ(llama.rope_theta, 500000.0);
  EXPECT_TRUE(llama.causal);
  EXPECT_FALSE(llama.qk_norm);
  EXPECT_FALSE(llama.tie_embeddings);

  const ModelConfig bert = load_model_config("bert-large");
  EXPECT_EQ(bert.norm, ops::Norm::kLayer);
  EXPECT_TRUE(bert.post_norm);
  EXPECT_FALSE(bert.causal);
  EXPECT_FALSE(bert.rope);
  EXPECT_TRUE(bert.learned_positions);
  EXPECT_EQ(bert.type_vocab, 2);
  EXPECT_EQ(bert.mlp_act, ops::Act::kGelu);
  EXPECT_EQ(bert.dtype.name(), num::bf16().name());  // fp32 checkpoint run in bf16

  EXPECT_TRUE(load_model_config("qwen3-8b").qk_norm);
  const ModelConfig gpt = load_model_config("gpt3-6.7b");
  EXPECT_EQ(gpt.norm, ops::Norm::kLayer);
  EXPECT_TRUE(gpt.attn_bias && gpt.mlp_bias && gpt.learned_positions);
  EXPECT_FALSE(gpt.rope);
  const ModelConfig moe = load_model_config("qwen3-30b-a3b");
  EXPECT_TRUE(moe.moe());
  EXPECT_GT(moe.experts_per_token, 0);
}

// Parameter counts against the published sizes. Each band is the count's own slack:
//  - Llama 3.1 8B: 8.03e9 on its model card; params() counts exactly the checkpoint's tensors
//    (untied embeddings and head), so 2% only absorbs the card's rounding.
//  - Llama 3.1 70B: 70.6e9 (model card); as above.
//  - Qwen3-32B: 32.8e9 (model card), q/k norms included; as above.
//  - BERT-large uncased: 335.14e6 for BertModel (HF), which includes the pooler (1024 x 1024
//    + 1024 = 1.05e6, 0.31%) that an encoder forward without the classification head does
//    not run and params() leaves out; its token-type embeddings (2 x 1024) are counted. The
//    MLM head (transform 1.05e6 + LayerNorm + decoder bias 30522, ~0.32%) is not counted
//    either. 1% covers both omissions, and fails if any real tensor group (an attention or
//    MLP matrix is >= 1.2% of the model) went missing or was counted twice.
TEST(ModelConfig, ParameterCountsMatchPublishedSizes) {
  auto rel = [](const char* name, double published) {
    return static_cast<double>(load_model_config(name).params()) / published - 1.0;
  };
  EXPECT_LT(std::abs(rel("llama-3.1-8b", 8.03e9)), 0.02);
  EXPECT_LT(std::abs(rel("llama-3.1-70b", 70.6e9)), 0.02);
  EXPECT_LT(std::abs(rel("qwen3-32b", 32.8e9)), 0.02);
  EXPECT_LT(std::abs(rel("bert-large", 335.14e6)), 0.01);
  // BERT-large exactly: 24 layers of (4 H^2 + 4 H biases + 2 H I + I + H biases + 2 LayerNorms
  // of 2H) + word (tied), position and type embeddings + the embeddings' LayerNorm.
  const int64_t H = 1024, I = 4096;
  const int64_t layer = 4 * H * H + 4 * H + 2 * H * I + I + H + 4 * H;
  EXPECT_EQ(load_model_config("bert-large").params(),
            24 * layer + 30522 * H + 512 * H + 2 * H + 2 * H);
  // tiny-llama: spec/models/README.md's 1.7M.
  EXPECT_LT(std::abs(rel("tiny-llama", 1.7e6)), 0.05);
}

// A minimal valid llama config, to break one key at a time (a key it lacks is added).
std::string llama_json(const std::string& replace_key = "", const std::string& with = "") {
  std::vector<std::pair<std::string, std::string>> kv{
      {"model_type", "\"llama\""},  {"hidden_size", "256"},       {"num_hidden_layers", "2"},
      {"num_attention_heads", "4"}, {"num_key_value_heads", "2"}, {"intermediate_size", "512"},
      {"vocab_size", "1024"},       {"rms_norm_eps", "1e-5"},
  };
  if (!with.empty() &&
      std::none_of(kv.begin(), kv.end(), [&](const auto& e) { return e.first == replace_key; }))
    kv.emplace_back(replace_key, with);
  std::string out = "{";
  bool first = true;
  for (auto& [k, v] : kv) {
    if (k == replace_key) {
      if (with.empty()) continue;  // drop the key
      v = with;
    }
    out += (first ? "" : ", ") + ("\"" + k + "\": " + v);
    first = false;
  }
  return out + "}";
}

TEST(ModelConfig, ParsesAMinimalConfigWithDefaults) {
  const ModelConfig m = parse_model_config(llama_json(), "mini.json");
  EXPECT_EQ(m.hidden, 256);
  EXPECT_EQ(m.head_dim, 64);  // hidden / heads when head_dim is absent
  EXPECT_EQ(m.source, "mini.json");
  EXPECT_DOUBLE_EQ(m.rope_theta, 10000.0);
}

TEST(ModelConfig, InvalidJsonIsAnInputError) {
  const InputError e = input_error([] { parse_model_config("{\"hidden_size\": 4", "bad.json"); });
  EXPECT_TRUE(has(e.what(), "bad.json")) << e.what();
  EXPECT_TRUE(has(e.what(), "JSON")) << e.what();
  const InputError arr = input_error([] { parse_model_config("[1, 2]", "arr.json"); });
  EXPECT_TRUE(has(arr.what(), "object")) << arr.what();
}

TEST(ModelConfig, MissingKeyIsNamed) {
  const InputError e =
      input_error([] { parse_model_config(llama_json("hidden_size"), "nohidden.json"); });
  EXPECT_EQ(e.key(), "hidden_size");
  EXPECT_TRUE(has(e.what(), "hidden_size")) << e.what();
  EXPECT_TRUE(has(e.what(), "nohidden.json")) << e.what();
  EXPECT_TRUE(has(e.what(), "missing")) << e.what();
}

TEST(ModelConfig, UnknownModelTypeIsNamed) {
  const InputError e =
      input_error([] { parse_model_config(llama_json("model_type", "\"mamba\""), "m.json"); });
  EXPECT_EQ(e.key(), "model_type");
  EXPECT_TRUE(has(e.what(), "mamba")) << e.what();
  EXPECT_TRUE(has(e.what(), "llama")) << e.what();  // lists the supported families
}

TEST(ModelConfig, HeadsNotDivisibleByKvHeads) {
  const InputError e =
      input_error([] { parse_model_config(llama_json("num_key_value_heads", "3"), "kv.json"); });
  EXPECT_EQ(e.key(), "num_key_value_heads");
  EXPECT_TRUE(has(e.what(), "num_key_value_heads")) << e.what();
  // And a hidden size that the heads do not divide (no explicit head_dim).
  const InputError h =
      input_error([] { parse_model_config(llama_json("hidden_size", "250"), "h.json"); });
  EXPECT_EQ(h.key(), "num_attention_heads");
}

TEST(ModelConfig, WrongTypesAreNamed) {
  const InputError s = input_error(
      [] { parse_model_config(llama_json("num_hidden_layers", "\"32\""), "str.json"); });
  EXPECT_EQ(s.key(), "num_hidden_layers");
  EXPECT_TRUE(has(s.what(), "num_hidden_layers")) << s.what();
  EXPECT_TRUE(has(s.what(), "integer")) << s.what();
  const InputError f =
      input_error([] { parse_model_config(llama_json("vocab_size", "1024.5"), "f.json"); });
  EXPECT_EQ(f.key(), "vocab_size");
  const InputError z =
      input_error([] { parse_model_config(llama_json("intermediate_size", "0"), "z.json"); });
  EXPECT_EQ(z.key(), "intermediate_size");
  const InputError d =
      input_error([] { parse_model_config(llama_json("rms_norm_eps", "\"small\""), "d.json"); });
  EXPECT_EQ(d.key(), "rms_norm_eps");
  const InputError a =
      input_error([] { parse_model_config(llama_json("model_type", "7"), "t.json"); });
  EXPECT_EQ(a.key(), "model_type");
}

TEST(ModelConfig, MalformedRopeScalingNamesTheNestedKey) {
  const InputError t = input_error([] {
    parse_model_config(llama_json("rope_scaling", R"({"rope_type": "magic", "factor": 2})"),
                       "r.json");
  });
  EXPECT_EQ(t.key(), "rope_scaling.rope_type");
  EXPECT_TRUE(has(t.what(), "magic")) << t.what();
  const InputError f = input_error([] {
    parse_model_config(llama_json("rope_scaling", R"({"rope_type": "linear", "factor": "x"})"),
                       "r.json");
  });
  EXPECT_EQ(f.key(), "rope_scaling.factor");
  const InputError o =
      input_error([] { parse_model_config(llama_json("rope_scaling", "[8]"), "r.json"); });
  EXPECT_EQ(o.key(), "rope_scaling");
  // The older key name "type" is read too.
  const ModelConfig m = parse_model_config(
      llama_json("rope_scaling", R"({"type": "linear", "factor": 2.0})"), "r.json");
  EXPECT_EQ(m.rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(m.rope_scaling.factor, 2.0);
}

TEST(ModelConfig, UnknownNameListsBuiltInModels) {
  const InputError e = input_error([] { load_model_config("no-such-model"); });
  EXPECT_TRUE(has(e.what(), "no-such-model")) << e.what();
  EXPECT_TRUE(has(e.what(), "llama-3.1-8b")) << e.what();
  const InputError p = input_error([] { load_model_config("/nonexistent/config.json"); });
  EXPECT_TRUE(has(p.what(), "/nonexistent/config.json")) << p.what();
}

}  // namespace
}  // namespace trnsim::graph
