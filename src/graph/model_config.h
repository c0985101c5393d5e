// A model's architecture from its Hugging Face config.json (the keys transformers' config
// classes read; no weights): the built-in ones are spec/models/<name>.json, each with its
// `_source`. Families: llama, mistral, qwen2, qwen3 (decoders with RMSNorm, RoPE, SwiGLU, GQA),
// gpt3 / gpt2 (LayerNorm, learned positions, GELU, biases), bert (post-norm encoder), and the
// MoE families qwen3_moe, mixtral, gpt_oss (every layer a sparse MoE block; gpt-oss's sliding
// windows, attention sinks and MXFP4 experts are not represented: it runs as bf16 full
// attention).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/rope.h"
#include "numerics/format.h"
#include "ops/ops.h"

namespace trnsim::graph {

struct ModelConfig {
  std::string name;        // file stem ("llama-3.1-8b") or the path given
  std::string model_type;  // config.json model_type
  std::string source;      // _source, or the file
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t intermediate = 0, vocab = 0, max_positions = 0;
  int64_t type_vocab = 0;  // BERT token types (0: none)
  ops::Norm norm = ops::Norm::kRms;
  double eps = 1e-5;
  ops::Act mlp_act = ops::Act::kGluSilu;  // GLU for gated MLPs, else the activation
  bool post_norm = false;                 // BERT: norm after each residual add
  bool causal = true;
  bool rope = true;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;  // config.json rope_scaling (null: none)
  bool learned_positions = false;
  bool qk_norm = false;
  bool attn_bias = false, mlp_bias = false;
  bool tie_embeddings = false;
  int64_t experts = 0, experts_per_token = 0, expert_intermediate = 0;
  // MoE: the top-k routing weights are a softmax over the chosen experts' logits (Mixtral,
  // gpt-oss, Qwen3-MoE with norm_topk_prob), else the full softmax's values at the top k.
  bool norm_top_k = true;
  num::Format dtype = num::bf16();  // weights and activations as the simulator runs them
  // An EAGLE draft head (eagle_draft_of): an fc over [token embedding, the target's last
  // hidden state] before its decoder layers.
  bool eagle_draft = false;

  // Parameters (embeddings and lm head included; tied embeddings once).
  int64_t params() const;
  bool moe() const { return experts > 0; }
};

// A built-in name (spec/models/<name>.json) or a path to a config.json. Throws InputError
// naming the file and the key for a missing or mistyped key, an unknown model_type, or shapes
// that do not divide (heads by kv heads); an unknown name lists the built-in ones.
ModelConfig load_model_config(std::string_view name_or_path);
// Parses config.json text; `where` names it in errors.
ModelConfig parse_model_config(std::string_view json_text, const std::string& where);
std::vector<std::string> list_models();

// The EAGLE draft head of `target` (Li et al., "EAGLE", ICML 2024; NxD Inference's EAGLE
// speculation): `layers` dense decoder layers of the target's shape, after an fc of [2 x hidden,
// hidden] over the token's embedding and the target's last hidden state, with the target's
// final norm and LM head. Named "<target>-eagle".
ModelConfig eagle_draft_of(const ModelConfig& target, int64_t layers = 1);

}  // namespace trnsim::graph
