// Running a model on a simulated chip (graph/model_run.h): timing-only runs (latency, MFU,
// kernel cache, determinism, what fusion saves, chip generations), functional runs with values
// and the options they refuse.
#include "graph/model_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "graph/model_config.h"
#include "graph_test_util.h"

namespace trnsim::graph {
namespace {

ModelResult run(const char* model, const ModelRunOptions& o) {
  return run_model(load_model_config(model), o);
}

TEST(ModelRun, TinyLlamaTimingOnly) {
  const ModelResult r = run("tiny-llama", {.chip = "trn2", .tp = 1, .seq = 128});
  EXPECT_EQ(r.model, "tiny-llama");
  EXPECT_EQ(r.chip, "trn2");
  EXPECT_EQ(r.tp, 1);
  EXPECT_EQ(r.seq, 128);
  EXPECT_EQ(r.layers, 2);
  EXPECT_EQ(r.params, load_model_config("tiny-llama").params());
  EXPECT_GT(r.latency_us, 0);
  EXPECT_FALSE(r.rows.empty());
  EXPECT_EQ(r.kernels, 12);
  EXPECT_EQ(r.fusion.nodes_before, 35);
  EXPECT_EQ(r.fusion.nodes_after, 12);
  // The two layers' copies of an operator are simulated once: the cache hits, and there are
  // fewer distinct kernels than kernels; the tiling search's probes come on top.
  EXPECT_GT(r.cache_hits, 0);
  EXPECT_LT(r.kernels_simulated, r.kernels);
  EXPECT_EQ(r.kernels_simulated + r.cache_hits, r.kernels);
  EXPECT_GE(r.simulations, r.kernels_simulated);
  EXPECT_GT(r.mfu, 0);
  EXPECT_LT(r.mfu, 1);
  EXPECT_TRUE(r.fits());
  EXPECT_GT(r.hbm_bytes, 0);
  EXPECT_GT(r.weight_bytes, 0);
  EXPECT_TRUE(r.outputs.empty());  // timing only
  // The rows' counts add up to the kernels, and their times to the latency less the launch.
  int64_t kernels = 0;
  double total = 0;
  for (const OpRow& row : r.rows) {
    kernels += row.count;
    total += row.total_us();
    EXPECT_GT(row.time_us, 0) << row.name;
  }
  EXPECT_EQ(kernels, r.kernels);
  EXPECT_NEAR(total + r.launch_us, r.latency_us, 1e-6 * r.latency_us);
  ASSERT_EQ(r.timeline.size(), static_cast<size_t>(r.kernels));
  EXPECT_NEAR(r.timeline.back().start_us + r.timeline.back().dur_us + r.launch_us, r.latency_us,
              1e-6 * r.latency_us);
  // FLOPs: 2 x params-in-matmuls x tokens + attention's causal half, one rank.
  double flops = 0;
  for (const OpRow& row : r.rows) flops += row.flops * static_cast<double>(row.count);
  EXPECT_DOUBLE_EQ(r.flops, flops);
  EXPECT_TRUE(has(r.table(), "latency"));
  EXPECT_TRUE(has(r.table(), "MFU"));
  EXPECT_TRUE(r.trace_json().contains("traceEvents"));
}

TEST(ModelRun, Deterministic) {
  const ModelRunOptions o{.chip = "trn2", .tp = 1, .seq = 128};
  const ModelResult a = run("tiny-llama", o), b = run("tiny-llama", o);
  EXPECT_EQ(a.latency_us, b.latency_us);
  EXPECT_EQ(a.to_json().dump(), b.to_json().dump());
  EXPECT_EQ(a.table(), b.table());
}

// Fusion keeps intermediates in SBUF: fewer kernels, less HBM traffic, less time. fuse =
// false keeps only the fusion the kernels require (RoPE and q/k norms inside attention).
TEST(ModelRun, FusionSavesTimeAndHbmTraffic) {
  for (const char* model : {"tiny-llama", "bert-large", "gpt3-6.7b"}) {
    SCOPED_TRACE(model);
    ModelRunOptions o{.chip = "trn2", .tp = 1, .seq = 128, .layers = 1};
    if (std::string(model) == "gpt3-6.7b") o.tp = 8;
    const ModelResult fused = run(model, o);
    o.fuse = false;
    const ModelResult unfused = run(model, o);
    EXPECT_LT(fused.kernels, unfused.kernels);
    EXPECT_LT(fused.hbm_bytes, unfused.hbm_bytes);
    EXPECT_LT(fused.latency_us, unfused.latency_us)
        << "fused " << fused.latency_us << " us, unfused " << unfused.latency_us << " us";
    EXPECT_DOUBLE_EQ(fused.flops, unfused.flops);  // the same useful work
  }
}

TEST(ModelRun, ValuesOnTinyLlama) {
  const ModelResult r = run("tiny-llama", {.chip = "trn2", .tp = 1, .seq = 64, .values = true});
  ASSERT_EQ(r.outputs.size(), 1u);
  ASSERT_TRUE(r.outputs.contains("lm_head"));
  const std::vector<float>& logits = r.outputs.at("lm_head");
  ASSERT_EQ(logits.size(), 64u * 1024u);
  double max_abs = 0;
  for (float x : logits) {
    ASSERT_TRUE(std::isfinite(x));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(x)));
  }
  EXPECT_GT(max_abs, 0);  // not all zeros
  for (const char* w : {"layers.0.self_attn.q_proj.weight", "layers.1.mlp.down_proj.weight",
                        "embed_tokens.weight", "lm_head.weight", "norm.weight", "input_ids"})
    EXPECT_TRUE(r.weights.contains(w)) << w;
  EXPECT_EQ(r.weights.at("layers.0.self_attn.q_proj.weight").size(), 256u * 256u);
  // Timing is the same as without values.
  const ModelResult t = run("tiny-llama", {.chip = "trn2", .tp = 1, .seq = 64});
  EXPECT_EQ(r.latency_us, t.latency_us);
  // The caller's weights and inputs are used: the returned ones give the same logits.
  const ModelResult again =
      run_model(load_model_config("tiny-llama"),
                {.chip = "trn2", .tp = 1, .seq = 64, .values = true}, &r.weights, &r.weights);
  EXPECT_EQ(again.outputs.at("lm_head"), logits);
  EXPECT_TRUE(again.weights.empty());  // nothing generated
  // A different seed gives different weights and logits.
  const ModelResult other =
      run("tiny-llama", {.chip = "trn2", .tp = 1, .seq = 64, .values = true, .seed = 7});
  EXPECT_NE(other.outputs.at("lm_head"), logits);
}

// Functional runs of the other families' fused kernels (LayerNorm prologues with biases and
// learned positions, post-norm add + norm, q/k norms in attention), on tiny configs of the
// same shapes' kinds: finite, non-trivial outputs of the right size.
TEST(ModelRun, ValuesOnEveryFamily) {
  const char* gpt2 = R"({"model_type": "gpt2", "n_embd": 256, "n_layer": 2, "n_head": 4,
      "n_positions": 128, "vocab_size": 512, "activation_function": "gelu_new"})";
  const char* bert = R"({"model_type": "bert", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 512,
      "max_position_embeddings": 128, "hidden_act": "gelu"})";
  const char* qwen3 = R"({"model_type": "qwen3", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
      "intermediate_size": 512, "vocab_size": 512, "rope_theta": 1000000.0})";
  for (const auto& [json, out, cols] :
       {std::tuple{gpt2, "lm_head", 512}, std::tuple{bert, "layers.1.output.LayerNorm", 256},
        std::tuple{qwen3, "lm_head", 512}}) {
    const ModelConfig m = parse_model_config(json, "tiny.json");
    SCOPED_TRACE(m.model_type);
    const ModelResult r =
        run_model(m, {.chip = "trn2", .tp = 1, .seq = 128, .values = true, .seed = 3});
    ASSERT_TRUE(r.outputs.contains(out)) << r.graph_text;
    const std::vector<float>& y = r.outputs.at(out);
    ASSERT_EQ(y.size(), static_cast<size_t>(128 * cols));
    double sum_sq = 0;
    for (float v : y) {
      ASSERT_TRUE(std::isfinite(v));
      sum_sq += static_cast<double>(v) * v;
    }
    EXPECT_GT(sum_sq / static_cast<double>(y.size()), 1e-4);
    if (m.model_type == "bert") {  // a LayerNorm output: mean ~ beta's mean, rms ~ |gamma|
      EXPECT_NEAR(std::sqrt(sum_sq / static_cast<double>(y.size())), 1.0, 0.2);
    }
  }
}

// MoE models time their blocks (router, top-k, experts under balanced routing); their values
// are not computed yet, which a values run says instead of returning wrong numbers.
TEST(ModelRun, MixtureOfExpertsTimingOnly) {
  const ModelConfig m = load_model_config("qwen3-30b-a3b");
  const ModelResult r = run_model(m, {.chip = "trn2", .seq = 128, .layers = 1});
  EXPECT_GT(r.latency_us, 0);
  EXPECT_GT(r.mfu, 0);
  EXPECT_LT(r.mfu, 1);
  bool experts = false;
  for (const OpRow& row : r.rows)
    if (row.name == "layers.*.mlp.experts.gate_up") {
      experts = true;
      EXPECT_EQ(row.count, 128);
    }
  EXPECT_TRUE(experts) << r.table();
  // Values run with the routing the router computes (tests/python/test_models_moe.py checks
  // them against a reference); gpt-oss's, whose experts are not plain GLUs, are refused.
  const ModelResult v = run_model(load_model_config("tiny-qwen3-moe"),
                                  {.chip = "trn2", .tp = 1, .seq = 32, .values = true});
  const std::vector<float>& logits = v.outputs.at("lm_head");
  ASSERT_EQ(logits.size(), size_t{32 * 512});
  EXPECT_TRUE(std::all_of(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }));
  EXPECT_GT(*std::max_element(logits.begin(), logits.end()), 0.1F);
  const InputError e = input_error([&] {
    run_model(load_model_config("gpt-oss-120b"),
              {.chip = "trn2", .tp = 1, .seq = 64, .layers = 1, .values = true});
  });
  EXPECT_EQ(e.key(), "values");
  EXPECT_TRUE(has(e.what(), "gpt-oss")) << e.what();
  // A training step through MoE blocks is timed (graph/lower_moe.cc), its experts' optimizer
  // steps one row per weight; its values are refused.
  const ModelConfig tiny = load_model_config("tiny-qwen3-moe");
  const ModelResult step = run_model(tiny, {.chip = "trn2", .tp = 1, .seq = 32, .train = true});
  int64_t expert_steps = 0;
  for (const OpRow& row : step.rows) {
    EXPECT_FALSE(has(row.name, "experts.0.")) << row.name;
    if (row.name == "layers.*.mlp.experts.*.gate_proj.weight.adamw") expert_steps = row.count;
  }
  EXPECT_EQ(expert_steps, tiny.layers * tiny.experts);  // each layer's experts
  const InputError t = input_error([&] {
    run_model(load_model_config("tiny-qwen3-moe"),
              {.chip = "trn2", .tp = 1, .seq = 32, .values = true, .train = true});
  });
  EXPECT_EQ(t.key(), "values");
  EXPECT_TRUE(has(t.what(), "MoE")) << t.what();
}

TEST(ModelRun, ValuesRefuseBadWeightsAndTp) {
  const ModelConfig m = load_model_config("tiny-llama");
  const InputError tp =
      input_error([&] { run_model(m, {.chip = "trn2", .tp = 2, .seq = 64, .values = true}); });
  EXPECT_EQ(tp.key(), "tp");
  EXPECT_TRUE(has(tp.what(), "tp")) << tp.what();
  TensorMap w;  // empty: every weight is missing
  const InputError missing = input_error(
      [&] { run_model(m, {.chip = "trn2", .tp = 1, .seq = 64, .layers = 1, .values = true}, &w); });
  EXPECT_TRUE(has(missing.what(), "missing")) << missing.what();
  // More ranks than the chip has cores.
  EXPECT_EQ(input_error([&] { run_model(m, {.chip = "trn1", .tp = 4, .seq = 64}); }).key(), "tp");
}

// 405B parameters (810 GB of bf16) on one trn1 rank (16 GiB): refused before anything is
// simulated, so it must be quick.
TEST(ModelRun, ModelTooBigForValuesIsRefusedEarly) {
  const auto t0 = std::chrono::steady_clock::now();
  const InputError e = input_error([] {
    run("llama-3.1-405b", {.chip = "trn1", .tp = 1, .seq = 128, .layers = -1, .values = true});
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(has(e.what(), "does not fit") || has(e.what(), "do not fit")) << e.what();
  EXPECT_TRUE(has(e.what(), "short by")) << e.what();
  EXPECT_LT(s, 5.0);
}

// Llama 3.1 8B, 2 layers of 512 tokens, on each generation with every core as a rank
// (trn1: tp 2; trn2, trn3: tp 8). The orderings asserted follow from the chip specs, checked
// here first:
//  - trn1 > trn2: trn2 runs 4x the ranks, so each rank does 1/4 of trn1's rank's FLOPs and
//    reads 1/4 of its weight bytes, on a core whose bf16 peak is >= 0.8x trn1's and whose
//    share of HBM bandwidth is >= 0.8x trn1's: every per-rank bound is >= 3x smaller.
//  - trn3 <= trn2: same core count and PE array; trn3's per-core peak, HBM bandwidth and DMA
//    rates are each >= trn2's, and it has no launch overhead in the spec.
TEST(ModelRun, ChipGenerations) {
  const ModelConfig m = load_model_config("llama-3.1-8b");
  double lat[3] = {};
  const char* chips[3] = {"trn1", "trn2", "trn3"};
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(chips[i]);
    const ModelResult r = run_model(m, {.chip = chips[i], .seq = 512, .layers = 2});
    const arch::ChipSpec c = arch::load_chip(chips[i]);
    EXPECT_EQ(r.tp, c.chip.cores);
    EXPECT_EQ(r.layers, 2);
    EXPECT_GT(r.latency_us, 0);
    EXPECT_GT(r.mfu, 0);
    EXPECT_LT(r.mfu, 1);
    EXPECT_TRUE(r.fits());
    lat[i] = r.latency_us;
  }
  const arch::ChipSpec t1 = arch::load_chip("trn1"), t2 = arch::load_chip("trn2"),
                       t3 = arch::load_chip("trn3");
  auto per_core_peak = [](const arch::ChipSpec& c) { return c.chip.tflops.bf16 / c.chip.cores; };
  auto per_core_hbm = [](const arch::ChipSpec& c) {
    return c.chip.hbm.bandwidth_gbps / c.chip.cores;
  };
  ASSERT_EQ(t2.chip.cores, 4 * t1.chip.cores);
  ASSERT_GE(per_core_peak(t2), 0.8 * per_core_peak(t1));
  ASSERT_GE(per_core_hbm(t2), 0.8 * per_core_hbm(t1));
  EXPECT_GT(lat[0], lat[1]);
  ASSERT_EQ(t3.chip.cores, t2.chip.cores);
  ASSERT_GE(per_core_peak(t3), per_core_peak(t2));
  ASSERT_GE(t3.chip.hbm.bandwidth_gbps, t2.chip.hbm.bandwidth_gbps);
  EXPECT_LE(lat[2], lat[1]);
}

}  // namespace
}  // namespace trnsim::graph
