// Weight-only quantization of a model (build.h WeightQuant, NxD Inference's quantized linears):
// which weights the graph holds in the 1-byte format and with scales, the values a run gives
// against the unquantized model's, and what it does to a decode step's time and memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "graph/build.h"
#include "graph/model_config.h"
#include "graph/model_run.h"
#include "graph_test_util.h"

namespace trnsim::graph {
namespace {

const Value& value(const Graph& g, const std::string& name) {
  for (const Value& v : g.values)
    if (v.name == name) return v;
  throw std::runtime_error("no value " + name);
}

bool has_value(const Graph& g, const std::string& name) {
  return std::any_of(g.values.begin(), g.values.end(),
                     [&](const Value& v) { return v.name == name; });
}

// RMS of (a - b) over RMS of b.
double relative_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    n += double{b[i]} * b[i];
  }
  return std::sqrt(d / n);
}

TEST(QuantizedWeights, FormatsByName) {
  const arch::ChipSpec trn2 = arch::load_chip("trn2"), trn3 = arch::load_chip("trn3");
  EXPECT_EQ(quantized_weight_format(trn2, "fp8"), num::fp8_e4m3());  // legacy e4m3 (UNSAFE cast)
  EXPECT_EQ(quantized_weight_format(trn3, "fp8"), num::fp8_e4m3fn());
  EXPECT_EQ(quantized_weight_format(trn2, "int8"), num::int_format(num::Dtype::kInt8));
  EXPECT_EQ(quantized_weight_format(trn2, "fp8_e5m2"), num::fp8_e5m2());
  EXPECT_FALSE(quantized_weight_format(trn2, "bf16").has_value());
  const InputError e = input_error([&] { quantized_weight_format(trn2, "int4", "--weights"); });
  EXPECT_EQ(e.key(), "--weights");
  EXPECT_TRUE(has(e.what(), "int4")) << e.what();
}

TEST(QuantizedWeights, TheDecoderLinearsAreQuantized) {
  const ModelConfig m = load_model_config("llama-3.1-8b");
  const WeightQuant fp8{.dtype = num::fp8_e4m3()};
  const Graph g = build_model_graph(m, {.seq = 16, .tp = 8, .layers = 2, .quant = fp8});
  for (const char* w : {"layers.0.self_attn.q_proj", "layers.1.self_attn.o_proj",
                        "layers.0.mlp.gate_proj", "layers.1.mlp.down_proj"}) {
    SCOPED_TRACE(w);
    const Value& weight = value(g, std::string(w) + ".weight");
    EXPECT_EQ(weight.dtype, num::fp8_e4m3());
    const Value& scale = value(g, std::string(w) + ".scale");
    EXPECT_EQ(scale.dtype, num::fp32());
    EXPECT_EQ(scale.elements(), weight.shape[1]);  // one per output channel
  }
  for (const char* w : {"lm_head.weight", "embed_tokens.weight"})
    EXPECT_EQ(value(g, w).dtype, num::bf16()) << w;
  EXPECT_FALSE(has_value(g, "lm_head.scale"));
  // Only the MLPs, as the Llama-3.3-70B FP8 tutorial's checkpoint.
  const Graph mlp = build_model_graph(
      m, {.seq = 16, .tp = 8, .layers = 1, .quant = {.dtype = num::fp8_e4m3(), .mlp_only = true}});
  EXPECT_EQ(value(mlp, "layers.0.self_attn.q_proj.weight").dtype, num::bf16());
  EXPECT_EQ(value(mlp, "layers.0.mlp.up_proj.weight").dtype, num::fp8_e4m3());
  // MoE: the experts, not the router.
  const Graph moe = build_model_graph(load_model_config("qwen3-30b-a3b"),
                                      {.seq = 16, .tp = 8, .layers = 1, .quant = fp8});
  const Node& block = *std::find_if(moe.nodes.begin(), moe.nodes.end(),
                                    [](const Node& n) { return n.kind == OpKind::kMoe; });
  ASSERT_EQ(block.scales.size(), block.weights.size());
  EXPECT_EQ(block.scales[0], -1);  // the router
  EXPECT_EQ(value(moe, "layers.0.mlp.experts.5.down_proj.weight").dtype, num::fp8_e4m3());
  EXPECT_NO_THROW(moe.validate());
}

// Values: the weights drawn in bf16, quantized per channel as NxD quantizes a checkpoint; the
// logits stay close to the bf16 model's (int8: 256 levels a channel; FP8 E4M3: 3 mantissa
// bits, a relative error up to 2^-4 a weight) but are not the same.
TEST(QuantizedWeights, ValuesStayCloseToTheUnquantizedModel) {
  const ModelConfig m = load_model_config("tiny-llama");
  ModelRunOptions o{.chip = "trn2", .tp = 1, .seq = 64, .values = true, .seed = 5};
  const ModelResult ref = run_model(m, o);
  for (const auto& [w, bound] : {std::pair{"int8", 0.05}, std::pair{"fp8", 0.15}}) {
    SCOPED_TRACE(w);
    o.weights = w;
    const ModelResult q = run_model(m, o, &ref.weights, &ref.weights);  // the same checkpoint
    const std::vector<float>& a = q.outputs.at("lm_head");
    const std::vector<float>& b = ref.outputs.at("lm_head");
    ASSERT_EQ(a.size(), b.size());
    const double err = relative_rms(a, b);
    EXPECT_LT(err, bound);
    EXPECT_GT(err, 1e-4);  // quantized: not the bf16 logits
    EXPECT_LT(q.weight_bytes, ref.weight_bytes);
  }
  // Drawn weights: the scales are returned with them.
  o.weights = "fp8";
  EXPECT_TRUE(run_model(m, o).weights.contains("layers.0.mlp.down_proj.scale"));
  // MoE experts quantized too, their routing computed.
  const ModelConfig moe = load_model_config("tiny-qwen3-moe");
  ModelRunOptions mo{.chip = "trn2", .tp = 1, .seq = 32, .values = true, .seed = 2};
  const ModelResult mref = run_model(moe, mo);
  mo.weights = "int8";
  const ModelResult mq = run_model(moe, mo, &mref.weights, &mref.weights);
  EXPECT_LT(relative_rms(mq.outputs.at("lm_head"), mref.outputs.at("lm_head")), 0.1);
}

// A decode step streams every weight once: FP8 halves the bytes and, with w stationary in
// TensorE (ops.h LinearTiling::weight_stationary), the time of the linears; int8 halves the
// HBM reads but its DMA writes bf16 to SBUF, so the DMA engines move as much as for bf16.
TEST(QuantizedWeights, DecodeStepTimeAndMemory) {
  const ModelConfig m = load_model_config("llama-3.1-8b");
  ModelRunOptions o{.chip = "trn2", .kv_cache = true, .past = 1023, .tp = 8, .seq = 1};
  const ModelResult bf16 = run_model(m, o);
  o.weights = "fp8";
  const ModelResult fp8 = run_model(m, o);
  o.weights = "int8";
  const ModelResult int8 = run_model(m, o);
  EXPECT_LT(fp8.latency_us, 0.8 * bf16.latency_us) << bf16.table() << fp8.table();
  // The decoder linears' bytes halve; the replicated embedding and the lm head do not.
  const Graph g = build_model_graph(
      m, {.seq = 1, .tp = 8, .kv_cache = true, .past = 1023, .quant = {.dtype = num::fp8_e4m3()}});
  int64_t saved = 0;
  for (const Node& n : g.nodes)
    for (size_t i = 0; i < n.scales.size(); ++i)
      if (n.scales[i] >= 0)
        saved += g.values[static_cast<size_t>(n.weights[i])].elements() -
                 g.values[static_cast<size_t>(n.scales[i])].bytes();
  EXPECT_EQ(fp8.weight_bytes, bf16.weight_bytes - saved);
  EXPECT_EQ(int8.weight_bytes, fp8.weight_bytes);
  EXPECT_LT(fp8.hbm_bytes, 0.65 * bf16.hbm_bytes);
  EXPECT_LT(int8.hbm_bytes, 0.65 * bf16.hbm_bytes);
  EXPECT_GT(int8.latency_us, 0.9 * bf16.latency_us);  // the DMA engines move bf16
  // Training keeps its weights in the model's dtype.
  o.weights = "fp8";
  o.kv_cache = false;
  o.past = 0;
  o.seq = 16;
  o.train = true;
  EXPECT_EQ(input_error([&] { run_model(m, o); }).key(), "weights");
}

}  // namespace
}  // namespace trnsim::graph
