// planner::serve: TTFT is the prefill at its bucket, TPOT the mean of decode steps that grow
// with the KV length, and the figures move the way the mechanisms say (a bigger batch costs a
// longer prefill; a longer output, a later mean decode step).
#include "planner/serve.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/model_config.h"

namespace trnsim::planner {
namespace {

ServeOptions tiny(int64_t batch, int64_t input, int64_t output) {
  ServeOptions o;
  o.chip = "trn2";
  o.tp = 2;
  o.batch = batch;
  o.input_tokens = input;
  o.output_tokens = output;
  return o;
}

const graph::ModelConfig& model() {
  static const graph::ModelConfig m = graph::load_model_config("tiny-llama");
  return m;
}

TEST(Serve, TtftIsThePrefillAtItsBucket) {
  const ServeResult r = serve(model(), tiny(1, 200, 16));
  EXPECT_EQ(r.bucket, 256);  // the smallest power of two >= 200, at least 128
  EXPECT_DOUBLE_EQ(r.ttft_ms, r.prefill.latency_us / 1e3);
  EXPECT_EQ(r.prefill.seq, 256);
  EXPECT_EQ(r.decode.seq, 1);
  EXPECT_EQ(serve(model(), tiny(1, 100, 16)).bucket, 128);
}

TEST(Serve, TpotIsTheMeanOfTheDecodeSamples) {
  const ServeResult r = serve(model(), tiny(1, 128, 513));
  ASSERT_EQ(r.decode_ms.size(), 3u);
  EXPECT_EQ(r.decode_ms.front().first, 129);
  EXPECT_EQ(r.decode_ms.back().first, 128 + 513 - 1);
  double lo = 1e300, hi = 0;
  for (const auto& [kv, ms] : r.decode_ms) {
    lo = std::min(lo, ms);
    hi = std::max(hi, ms);
  }
  EXPECT_GE(r.tpot_ms, lo);
  EXPECT_LE(r.tpot_ms, hi);
  EXPECT_LE(r.decode_ms.front().second, r.decode_ms.back().second);  // more keys, not faster
  EXPECT_NEAR(r.e2e_ms, r.ttft_ms + 512 * r.tpot_ms, 1e-9 * r.e2e_ms);
  EXPECT_NEAR(r.output_tokens_per_s, 513 / (r.e2e_ms / 1e3), 1e-9 * r.output_tokens_per_s);
  EXPECT_GT(r.decode.cache_bytes, 0);
}

TEST(Serve, BatchCostsPrefillTime) {
  const ServeResult one = serve(model(), tiny(1, 256, 8));
  const ServeResult four = serve(model(), tiny(4, 256, 8));
  EXPECT_GT(four.ttft_ms, one.ttft_ms);
  EXPECT_GT(four.output_tokens_per_s, one.output_tokens_per_s);
}

TEST(Serve, Deterministic) {
  const ServeResult a = serve(model(), tiny(2, 130, 40));
  const ServeResult b = serve(model(), tiny(2, 130, 40));
  EXPECT_EQ(a.to_json(), b.to_json());
}

TEST(Serve, BadOptions) {
  ServeOptions o = tiny(1, 300, 8);
  o.bucket = 256;
  EXPECT_THROW(serve(model(), o), InputError);  // the bucket cannot hold the prompt
  EXPECT_THROW(serve(model(), tiny(0, 8, 8)), InputError);
  EXPECT_THROW(serve(model(), tiny(1, 8, 0)), InputError);
  ServeOptions too_many = tiny(1, 8, 8);
  too_many.tp = 3;  // 4 heads
  EXPECT_THROW(serve(model(), too_many), InputError);
}

TEST(Serve, AcrossTheChipsOfASystem) {
  ServeOptions o = tiny(1, 128, 8);
  o.system = "trn1.32xlarge";
  o.tp = 4;  // two chips of two cores: all-reduces over the chips' links
  const ServeResult r = serve(model(), o);
  EXPECT_EQ(r.where, "trn1.32xlarge");
  EXPECT_EQ(r.prefill.chip, "trn1");
  bool all_reduce = false;
  for (const auto& row : r.decode.rows) all_reduce |= row.kind == "all_reduce";
  EXPECT_TRUE(all_reduce);
}

}  // namespace
}  // namespace trnsim::planner
