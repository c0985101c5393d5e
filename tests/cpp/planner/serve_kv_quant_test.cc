// A quantized KV cache in serving (ServeOptions::kv_cache_dtype, vLLM Neuron's kv_cache_dtype
// "fp8"): the cache's bytes per core halve, a decode step reads its cache at one byte an
// element, and the format follows the chip (graph::kv_cache_format); bad names are refused.
// (The step's time is not asserted: the decode attention kernel is latency-bound, so fewer
// bytes need not make it faster; docs/models.md, Serving.)
#include <gtest/gtest.h>

#include <string>

#include "arch/arch.h"
#include "base/error.h"
#include "graph/build.h"
#include "graph/model_config.h"
#include "planner/serve.h"

namespace trnsim::planner {
namespace {

const graph::ModelConfig& model() {
  static const graph::ModelConfig m = graph::load_model_config("tiny-llama");
  return m;
}

ServeOptions long_context(const std::string& kv) {
  ServeOptions o;
  o.chip = "trn2";
  o.tp = 2;
  o.input_tokens = 4000;
  o.output_tokens = 8;
  o.kv_cache_dtype = kv;
  return o;
}

TEST(ServeKvQuant, Fp8HalvesTheCacheAndItsReads) {
  const ServeResult bf = serve(model(), long_context("bf16"));
  const ServeResult f8 = serve(model(), long_context("fp8"));
  EXPECT_EQ(f8.decode.cache_bytes * 2, bf.decode.cache_bytes);
  EXPECT_LT(f8.decode.hbm_bytes, bf.decode.hbm_bytes);
  // The weights are the same; only the cache's traffic falls (and a decode step is no slower).
  EXPECT_EQ(f8.decode.weight_bytes, bf.decode.weight_bytes);
  EXPECT_EQ(f8.kv_cache_dtype, "fp8");
  EXPECT_EQ(f8.to_json()["kv_cache_dtype"], "fp8");
  EXPECT_NE(f8.text().find("KV cache: fp8"), std::string::npos);
  EXPECT_EQ(bf.text().find("KV cache: "), std::string::npos);
}

TEST(ServeKvQuant, FormatFollowsTheChipAndBadNamesAreRefused) {
  const arch::ChipSpec trn2 = arch::load_chip("trn2"), trn3 = arch::load_chip("trn3");
  EXPECT_FALSE(graph::kv_cache_format(trn2, "bf16").has_value());
  EXPECT_FALSE(graph::kv_cache_format(trn2, "auto").has_value());
  EXPECT_EQ(graph::kv_cache_format(trn2, "fp8"), num::fp8_e4m3());    // max 240 (vLLM Neuron)
  EXPECT_EQ(graph::kv_cache_format(trn3, "fp8"), num::fp8_e4m3fn());  // max 448
  EXPECT_EQ(graph::kv_cache_format(trn2, "fp8_e5m2"), num::fp8_e5m2());
  for (const char* bad : {"int8", "fp16", ""}) {
    try {
      (void)graph::kv_cache_format(trn2, bad);
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("kv_cache_dtype"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(serve(model(), long_context("int8")), InputError);
}

}  // namespace
}  // namespace trnsim::planner
