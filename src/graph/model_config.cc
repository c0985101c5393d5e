#include "graph/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "arch/arch.h"
#include "base/error.h"

namespace trnsim::graph {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

class Reader {
 public:
  Reader(const json& j, std::string where, std::string prefix = "")
      : j_(j), where_(std::move(where)), prefix_(std::move(prefix)) {}
  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  int64_t i(const char* key) const {
    if (!has(key)) throw InputError(where_, prefix_ + key, "missing: the model needs this key");
    const json& v = j_.at(key);
    // Sizes up to 2^24 (a vocabulary of 16 M, a hidden size of 16 M): far beyond any model,
    // and small enough that the products of shapes stay exact.
    constexpr int64_t kMax = int64_t{1} << 24;
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > kMax) ||
        v.get<int64_t>() < 1 || v.get<int64_t>() > kMax)
      throw InputError(where_, prefix_ + key,
                       fmt::format("expected an integer in [1, {}], got {}", kMax, v.dump()));
    return v.get<int64_t>();
  }
  int64_t i(const char* key, int64_t dflt) const { return has(key) ? i(key) : dflt; }
  double d(const char* key, double dflt) const {
    if (!has(key)) return dflt;
    const json& v = j_.at(key);
    if (!v.is_number())
      throw InputError(where_, prefix_ + key, fmt::format("expected a number, got {}", v.dump()));
    return v.get<double>();
  }
  bool b(const char* key, bool dflt) const {
    if (!has(key)) return dflt;
    const json& v = j_.at(key);
    if (!v.is_boolean())
      throw InputError(where_, prefix_ + key,
                       fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>();
  }
  std::string s(const char* key, const std::string& dflt) const {
    if (!has(key)) return dflt;
    const json& v = j_.at(key);
    if (!v.is_string())
      throw InputError(where_, prefix_ + key, fmt::format("expected a string, got {}", v.dump()));
    return v.get<std::string>();
  }
  const std::string& where() const { return where_; }
  // A nested object; errors name it as "file: key.inner".
  Reader sub(const char* key) const {
    const json& v = j_.at(key);
    if (!v.is_object())
      throw InputError(where_, prefix_ + key, fmt::format("expected an object, got {}", v.dump()));
    return Reader(v, where_, prefix_ + key + ".");
  }

 private:
  const json& j_;
  std::string where_;
  std::string prefix_;  // of a nested object's keys
};

ops::Act act_of(const Reader& r, const char* key, const std::string& dflt, bool glu) {
  const std::string a = r.s(key, dflt);
  if (a == "silu" || a == "swish") return glu ? ops::Act::kGluSilu : ops::Act::kSilu;
  if (a == "gelu") return glu ? ops::Act::kGluGelu : ops::Act::kGelu;
  if (a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu_fast")
    return glu ? ops::Act::kGluGelu : ops::Act::kGeluTanh;
  if (a == "relu" && !glu) return ops::Act::kRelu;
  throw InputError(r.where(), key,
                   fmt::format("activation '{}' is not supported; use silu, gelu, gelu_new{}", a,
                               glu ? "" : " or relu"));
}

// transformers' rope_scaling: "rope_type" (older configs: "type") and the type's parameters.
RopeScaling rope_scaling_of(const Reader& r) {
  RopeScaling s;
  s.type = r.s("rope_type", r.s("type", "default"));
  static const char* const kTypes[] = {"default", "linear", "llama3",
                                       "dynamic", "yarn",   "longrope"};
  if (std::find(std::begin(kTypes), std::end(kTypes), s.type) == std::end(kTypes))
    throw InputError(r.where(), "rope_scaling.rope_type",
                     fmt::format("'{}' is not a transformers rope type (default, linear, llama3, "
                                 "dynamic, yarn, longrope)",
                                 s.type));
  if (s.type == "default") return s;
  s.factor = r.d("factor", 1.0);
  if (!(s.factor >= 1.0))
    throw InputError(r.where(), "rope_scaling.factor",
                     fmt::format("expected a number >= 1, got {}", s.factor));
  if (s.type == "llama3") {
    s.low_freq_factor = r.d("low_freq_factor", 1.0);
    s.high_freq_factor = r.d("high_freq_factor", 4.0);
    s.original_max_positions = r.i("original_max_position_embeddings", 8192);
    if (!(s.high_freq_factor > s.low_freq_factor && s.low_freq_factor > 0))
      throw InputError(r.where(), "rope_scaling.high_freq_factor",
                       fmt::format("expected high_freq_factor > low_freq_factor > 0, got {} and {}",
                                   s.high_freq_factor, s.low_freq_factor));
  }
  return s;
}

num::Format dtype_of(const Reader& r) {
  const std::string t = r.s("torch_dtype", "bfloat16");
  // fp32 checkpoints (BERT) run in bf16 as Neuron's auto-cast does by default for matmuls.
  if (t == "bfloat16" || t == "float32" || t == "float16")
    return t == "float16" ? num::fp16() : num::bf16();
  throw InputError(r.where(), "torch_dtype",
                   fmt::format("'{}' is not bfloat16, float16 or float32", t));
}

void decoder(ModelConfig& m, const Reader& r) {
  m.hidden = r.i("hidden_size");
  m.layers = r.i("num_hidden_layers");
  m.heads = r.i("num_attention_heads");
  m.kv_heads = r.i("num_key_value_heads", m.heads);
  m.head_dim = r.i("head_dim", m.hidden / m.heads);
  m.intermediate = r.i("intermediate_size");
  m.vocab = r.i("vocab_size");
  m.max_positions = r.i("max_position_embeddings", 4096);
  m.eps = r.d("rms_norm_eps", 1e-6);
  m.rope_theta = r.d("rope_theta", 10000.0);
  if (r.has("rope_scaling")) m.rope_scaling = rope_scaling_of(r.sub("rope_scaling"));
  m.mlp_act = act_of(r, "hidden_act", "silu", true);
  m.attn_bias = r.b("attention_bias", m.model_type == "qwen2");
  m.mlp_bias = r.b("mlp_bias", false);
  m.tie_embeddings = r.b("tie_word_embeddings", false);
  m.qk_norm = m.model_type == "qwen3" || m.model_type == "qwen3_moe";
  if (m.model_type == "qwen3_moe") {
    m.experts = r.i("num_experts");
    m.experts_per_token = r.i("num_experts_per_tok");
    m.expert_intermediate = r.i("moe_intermediate_size");
    m.norm_top_k = r.b("norm_topk_prob", false);  // Qwen3MoeConfig's default
  } else if (m.model_type == "mixtral") {
    m.experts = r.i("num_local_experts");
    m.experts_per_token = r.i("num_experts_per_tok");
    m.expert_intermediate = m.intermediate;
  } else if (m.model_type == "gpt_oss") {
    m.experts = r.i("num_local_experts");
    m.experts_per_token =
        r.i(r.has("experts_per_token") ? "experts_per_token" : "num_experts_per_tok");
    m.expert_intermediate = m.intermediate;
    m.attn_bias = true;
  }
}

void gpt(ModelConfig& m, const Reader& r) {
  m.hidden = r.i("n_embd");
  m.layers = r.i("n_layer");
  m.heads = r.i("n_head");
  m.kv_heads = m.heads;
  m.head_dim = m.hidden / m.heads;
  m.intermediate = r.i("n_inner", 4 * m.hidden);
  m.vocab = r.i("vocab_size");
  m.max_positions = r.i("n_positions", 2048);
  m.norm = ops::Norm::kLayer;
  m.eps = r.d("layer_norm_epsilon", 1e-5);
  m.mlp_act = act_of(r, "activation_function", "gelu_new", false);
  m.rope = false;
  m.learned_positions = true;
  m.attn_bias = m.mlp_bias = true;
  m.tie_embeddings = r.b("tie_word_embeddings", true);
}

void bert(ModelConfig& m, const Reader& r) {
  m.hidden = r.i("hidden_size");
  m.layers = r.i("num_hidden_layers");
  m.heads = r.i("num_attention_heads");
  m.kv_heads = m.heads;
  m.head_dim = m.hidden / m.heads;
  m.intermediate = r.i("intermediate_size");
  m.vocab = r.i("vocab_size");
  m.max_positions = r.i("max_position_embeddings", 512);
  m.type_vocab = r.i("type_vocab_size", 2);
  m.norm = ops::Norm::kLayer;
  m.eps = r.d("layer_norm_eps", 1e-12);
  m.mlp_act = act_of(r, "hidden_act", "gelu", false);
  m.post_norm = true;
  m.causal = false;
  m.rope = false;
  m.learned_positions = true;
  m.attn_bias = m.mlp_bias = true;
  m.tie_embeddings = true;
}

}  // namespace

ModelConfig eagle_draft_of(const ModelConfig& target, int64_t layers) {
  if (!target.rope || target.learned_positions || target.post_norm || !target.causal)
    throw InputError(target.name, "eagle",
                     "EAGLE draft heads are for decoder LLMs with rotary positions (Llama, Qwen, "
                     "Mixtral); not for this model");
  if (layers < 1) throw InputError(target.name, "eagle", "a draft head has at least one layer");
  ModelConfig d = target;
  d.name = target.name + "-eagle";
  d.source = "the EAGLE draft head of " + target.name + " (trnsim: its decoder layer's shape)";
  d.layers = layers;
  d.eagle_draft = true;
  d.experts = d.experts_per_token = d.expert_intermediate = 0;  // a dense layer, as EAGLE's
  return d;
}

int64_t ModelConfig::params() const {
  // In double: configs bound each size by 2^24, but their products can pass 2^63.
  const double h = static_cast<double>(hidden), hd = static_cast<double>(head_dim);
  const double q = static_cast<double>(heads) * hd, kv = static_cast<double>(kv_heads) * hd;
  double attn = h * (q + 2 * kv) + q * h;
  if (attn_bias) attn += q + 2 * kv + h;
  const double mats = ops::is_glu(mlp_act) ? 3 : 2, inter = static_cast<double>(intermediate);
  double mlp = mats * h * inter + (mlp_bias ? inter * (mats - 1) + h : 0);
  if (moe())
    mlp = static_cast<double>(experts) * mats * h * static_cast<double>(expert_intermediate) +
          h * static_cast<double>(experts);
  const double norms = (norm == ops::Norm::kLayer ? 2 : 1) * h * 2 + (qk_norm ? 2 * hd : 0);
  double total = static_cast<double>(layers) * (attn + mlp + norms);
  total += static_cast<double>(vocab) * h * (tie_embeddings ? 1 : 2) +
           h * (norm == ops::Norm::kLayer ? 2 : 1);
  if (learned_positions) total += static_cast<double>(max_positions) * h;
  if (eagle_draft) total += 2 * h * h;  // the fc over [embedding, target hidden]
  total += static_cast<double>(type_vocab) * h;
  return total < 9e18 ? static_cast<int64_t>(total) : int64_t{9'000'000'000'000'000'000};
}

ModelConfig parse_model_config(std::string_view json_text, const std::string& where) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {  // a syntax error, or a number out of range
    throw InputError(where, "", fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) throw InputError(where, "", "a config.json is a JSON object");
  const Reader r(j, where);
  ModelConfig m;
  m.model_type = r.s("model_type", "");
  m.source = r.s("_source", where);
  m.dtype = dtype_of(r);
  static const std::vector<std::string> kDecoders{"llama",     "mistral", "qwen2",  "qwen3",
                                                  "qwen3_moe", "mixtral", "gpt_oss"};
  if (std::find(kDecoders.begin(), kDecoders.end(), m.model_type) != kDecoders.end()) {
    decoder(m, r);
  } else if (m.model_type == "gpt3" || m.model_type == "gpt2") {
    gpt(m, r);
  } else if (m.model_type == "bert") {
    bert(m, r);
  } else {
    throw InputError(where, "model_type",
                     fmt::format("'{}' is not a supported family; supported: {}, gpt2, gpt3, bert",
                                 m.model_type, fmt::join(kDecoders, ", ")));
  }
  if (m.heads % m.kv_heads != 0)
    throw InputError(
        where, "num_key_value_heads",
        fmt::format("{} attention heads do not share {} kv heads evenly", m.heads, m.kv_heads));
  if (!r.has("head_dim") && m.hidden % m.heads != 0)
    throw InputError(
        where, "num_attention_heads",
        fmt::format("hidden size {} is not a multiple of {} heads", m.hidden, m.heads));
  return m;
}

std::vector<std::string> list_models() {
  std::vector<std::string> out;
  const fs::path dir = arch::spec_dir() / "models";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

ModelConfig load_model_config(std::string_view name_or_path) {
  const std::string arg(name_or_path);
  const bool path = arg.find('/') != std::string::npos || arg.ends_with(".json");
  const fs::path file = path ? fs::path(arg) : arch::spec_dir() / "models" / (arg + ".json");
  std::ifstream in(file);
  if (!in) {
    if (path) throw InputError(arg, "", "cannot read the file");
    throw InputError("model", arg,
                     fmt::format("unknown model; built-in: {}", fmt::join(list_models(), ", ")));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  ModelConfig m = parse_model_config(ss.str(), file.string());
  m.name = arg;
  return m;
}

}  // namespace trnsim::graph
