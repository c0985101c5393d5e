// planner::serve: TTFT is the prefill at its bucket, TPOT the mean of decode steps at their
// compiled graphs' shapes (KV bucket, compiled batch), and the figures move the way the
// mechanisms say (a bigger batch costs a longer prefill; a longer output, a later mean decode
// step; padding sequences and positions cost time). planner::serve_load: the continuous
// batching schedule under a closed or open request loop.
#include "planner/serve.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/model_config.h"
#include "planner/serve_load.h"

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

TEST(Serve, WithExactKvTpotIsTheMeanOfTheDecodeSamples) {
  ServeOptions o = tiny(1, 128, 513);
  o.kv_buckets = KvBuckets::kExact;
  const ServeResult r = serve(model(), o);
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

// NxD Inference's automatic buckets: decode steps at KV lengths 129 .. 640 read 256, 512 and
// 1024 positions (the compiled sequence: 128 + 513 -> 1024), and TPOT weighs each bucket's
// step by the steps taken in it.
TEST(Serve, DecodeStepsRunAtTheirPowerOfTwoKvBucket) {
  const ServeResult r = serve(model(), tiny(1, 128, 513));
  EXPECT_EQ(r.max_seq, 1024);
  ASSERT_EQ(r.decode_ms.size(), 3u);
  ASSERT_EQ(r.decode_steps.size(), 3u);
  EXPECT_EQ(r.decode_ms[0].first, 256);
  EXPECT_EQ(r.decode_ms[1].first, 512);
  EXPECT_EQ(r.decode_ms[2].first, 1024);
  EXPECT_EQ(r.decode_steps[0], 128);  // KV 129 .. 256
  EXPECT_EQ(r.decode_steps[1], 256);  // 257 .. 512
  EXPECT_EQ(r.decode_steps[2], 128);  // 513 .. 640
  const double want =
      (128 * r.decode_ms[0].second + 256 * r.decode_ms[1].second + 128 * r.decode_ms[2].second) /
      512;
  EXPECT_NEAR(r.tpot_ms, want, 1e-12 * want);
  // One graph at the compiled length: every step reads all of it, so not faster.
  ServeOptions o = tiny(1, 128, 513);
  o.kv_buckets = KvBuckets::kMax;
  const ServeResult m = serve(model(), o);
  ASSERT_EQ(m.decode_ms.size(), 1u);
  EXPECT_EQ(m.decode_ms[0].first, 1024);
  EXPECT_EQ(m.decode_steps[0], 512);
  EXPECT_GE(m.tpot_ms, r.tpot_ms);
}

// A decode graph compiled for 8 sequences runs 8 whatever is live (static shapes): one
// request pays for seven padding ones.
TEST(Serve, EveryDecodeStepRunsTheCompiledBatch) {
  const ServeResult one = serve(model(), tiny(1, 128, 8));
  ServeOptions o = tiny(1, 128, 8);
  o.compiled_batch = 8;
  const ServeResult padded = serve(model(), o);
  EXPECT_EQ(padded.decode.batch, 8);
  EXPECT_EQ(padded.prefill.batch, 1);  // the prompt alone
  EXPECT_DOUBLE_EQ(padded.ttft_ms, one.ttft_ms);
  EXPECT_GT(padded.tpot_ms, one.tpot_ms);
}

// Prompts prefilled one at a time (ctx_batch 1, as with continuous batching): the i-th of a
// batch of 4 has its first token after i prefills, 2.5 on average.
TEST(Serve, PromptsPrefilledOneByOne) {
  ServeOptions o = tiny(4, 128, 8);
  o.ctx_batch = 1;
  const ServeResult r = serve(model(), o);
  EXPECT_EQ(r.prefill.batch, 1);
  const double p = r.prefill.latency_us / 1e3;
  EXPECT_NEAR(r.ttft_ms, 2.5 * p, 1e-12 * p);
  EXPECT_NEAR(r.e2e_ms, 4 * p + 7 * r.tpot_ms, 1e-9 * r.e2e_ms);
}

// Speculative decoding: per iteration k draft steps and one verification of k + 1 positions,
// which yield (1 - a^(k+1)) / (1 - a) tokens; with every draft accepted, k + 1.
TEST(Serve, SpeculativeDecodingDividesAnIterationByItsTokens) {
  ServeOptions o = tiny(1, 100, 30);
  o.draft = &model();  // the model drafting for itself: only the arithmetic is at stake
  o.speculation_length = 3;
  o.acceptance = 0.5;
  const ServeResult r = serve(model(), o);
  EXPECT_NEAR(r.tokens_per_iteration, (1 - 0.0625) / 0.5, 1e-12);
  ASSERT_EQ(r.decode_ms.size(), 2u);  // KV 101 .. 129 reads 128 and 256 positions
  o.acceptance = 1;
  EXPECT_DOUBLE_EQ(serve(model(), o).tokens_per_iteration, 4);
  // A draft that is all rejected costs more than plain decoding; all accepted, less.
  const double plain = serve(model(), tiny(1, 100, 30)).tpot_ms;
  o.acceptance = 0;
  EXPECT_GT(serve(model(), o).tpot_ms, plain);
  o.acceptance = 1;
  o.draft = nullptr;
  EXPECT_THROW(serve(model(), o), InputError);  // no draft model
  o.draft = &model();
  o.acceptance = 1.5;
  EXPECT_THROW(serve(model(), o), InputError);
  o.acceptance = 0.7;
  o.kv_buckets = KvBuckets::kExact;
  EXPECT_THROW(serve(model(), o), InputError);
  LoadOptions l;
  o.kv_buckets = KvBuckets::kPow2;
  EXPECT_THROW(serve_load(model(), o, l), InputError);  // one batch only
}

// EAGLE: the draft is the target's head (one decoder layer over its hidden state and the LM
// head), cheaper per drafted token than the target's step.
TEST(Serve, EagleDraftsWithTheTargetsHead) {
  ServeOptions o = tiny(1, 100, 30);
  o.eagle = true;
  o.speculation_length = 3;
  o.acceptance = 0.8;
  const ServeResult r = serve(model(), o);
  EXPECT_EQ(r.draft_model, "tiny-llama-eagle");
  ServeOptions self = o;  // the whole 2-layer model drafting for itself
  self.eagle = false;
  self.draft = &model();
  EXPECT_LT(r.tpot_ms, serve(model(), self).tpot_ms);
  o.draft = &model();  // a draft model and the head: one draft only
  EXPECT_THROW(serve(model(), o), InputError);
  o.draft = nullptr;
  o.speculation_length = 0;  // EAGLE drafts tokens
  EXPECT_THROW(serve(model(), o), InputError);
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
  ServeOptions small = tiny(4, 8, 8);
  small.compiled_batch = 2;  // fewer sequences than the batch
  EXPECT_THROW(serve(model(), small), InputError);
  ServeOptions ctx = tiny(2, 8, 8);
  ctx.ctx_batch = 3;  // more prompts per prefill than the decode graph holds
  EXPECT_THROW(serve(model(), ctx), InputError);
  ServeOptions long_bucket = tiny(1, 100, 20);
  long_bucket.max_seq = 256;
  long_bucket.bucket = 512;  // a prefill longer than the compiled sequence
  EXPECT_THROW(serve(model(), long_bucket), InputError);
  ServeOptions short_seq = tiny(1, 200, 100);
  short_seq.max_seq = 256;  // 300 positions do not fit
  EXPECT_THROW(serve(model(), short_seq), InputError);
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

namespace trnsim::planner {
namespace {

// One client (closed loop, concurrency 1): the requests run one after another, each a prefill
// and output - 1 decode steps of the compiled batch at its KV buckets.
TEST(ServeLoad, OneClientRunsRequestsBackToBack) {
  LoadOptions l;
  l.concurrency = 1;
  l.requests = 3;
  const ServeOptions o = tiny(1, 100, 20);
  const LoadResult r = serve_load(model(), o, l);
  const ServeResult one = serve(model(), o);
  ASSERT_EQ(r.requests.size(), 3u);
  EXPECT_EQ(r.prefills, 3);
  EXPECT_EQ(r.decode_steps, 3 * 19);
  EXPECT_DOUBLE_EQ(r.mean_live, 1.0);
  for (size_t i = 0; i < 3; ++i) {
    const RequestRecord& q = r.requests[i];
    EXPECT_NEAR(q.ttft_ms(), one.ttft_ms, 1e-9);
    EXPECT_NEAR(q.tpot_ms(), one.tpot_ms, 1e-9);
    if (i > 0) EXPECT_DOUBLE_EQ(q.arrival_ms, r.requests[i - 1].done_ms);
  }
  EXPECT_NEAR(r.makespan_ms, 3 * one.e2e_ms, 1e-9 * r.makespan_ms);
  EXPECT_NEAR(r.output_tokens_per_s, 60 / (r.makespan_ms / 1e3), 1e-9);
}

// Four clients on a decode graph of four: prompts are prefilled one by one while the earlier
// requests wait (TTFT grows with the queue), then all four decode together.
TEST(ServeLoad, ClientsShareTheDecodeGraph) {
  LoadOptions l;
  l.concurrency = 4;
  l.requests = 4;
  const LoadResult r = serve_load(model(), tiny(1, 100, 20), l);
  EXPECT_EQ(r.options.compiled_batch, 4);
  EXPECT_EQ(r.options.ctx_batch, 1);
  EXPECT_EQ(r.prefills, 4);
  EXPECT_EQ(r.decode_steps, 19);
  EXPECT_DOUBLE_EQ(r.mean_live, 4.0);
  for (size_t i = 1; i < 4; ++i) EXPECT_GT(r.requests[i].ttft_ms(), r.requests[i - 1].ttft_ms());
  EXPECT_LE(r.ttft_ms.p50, r.ttft_ms.p90);
  EXPECT_LE(r.ttft_ms.p90, r.ttft_ms.p99);
}

// Open loop: Poisson arrivals, lengths within their spreads, the same schedule for a seed.
TEST(ServeLoad, OpenLoopIsDeterministicForASeed) {
  LoadOptions l;
  l.rate = 200;
  l.requests = 12;
  l.input_spread = 30;
  l.output_spread = 5;
  ServeOptions o = tiny(1, 100, 10);
  o.compiled_batch = 4;
  const LoadResult a = serve_load(model(), o, l), b = serve_load(model(), o, l);
  EXPECT_EQ(a.to_json(), b.to_json());
  double last = 0;
  for (const RequestRecord& q : a.requests) {
    EXPECT_GE(q.input, 70);
    EXPECT_LE(q.input, 130);
    EXPECT_GE(q.output, 5);
    EXPECT_LE(q.output, 15);
    EXPECT_GE(q.arrival_ms, last);
    EXPECT_GE(q.first_token_ms, q.arrival_ms);
    EXPECT_GE(q.done_ms, q.first_token_ms);
    last = q.arrival_ms;
  }
  l.seed = 2;
  EXPECT_NE(serve_load(model(), o, l).to_json(), a.to_json());
}

TEST(ServeLoad, Percentiles) {
  const Percentiles p = percentiles({5, 1, 4, 2, 3, 6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(p.mean, 5.5);
  EXPECT_DOUBLE_EQ(p.p50, 5);
  EXPECT_DOUBLE_EQ(p.p90, 9);
  EXPECT_DOUBLE_EQ(p.p99, 10);
  EXPECT_DOUBLE_EQ(percentiles({}).p99, 0);
}

TEST(ServeLoad, BadOptions) {
  const ServeOptions o = tiny(1, 100, 10);
  LoadOptions l;
  l.concurrency = 0;
  EXPECT_THROW(serve_load(model(), o, l), InputError);
  l = {};
  l.rate = -1;
  EXPECT_THROW(serve_load(model(), o, l), InputError);
  l = {};
  l.input_spread = 100;  // prompts of 0 tokens
  EXPECT_THROW(serve_load(model(), o, l), InputError);
  l = {};
  l.output_spread = -1;
  EXPECT_THROW(serve_load(model(), o, l), InputError);
  ServeOptions short_seq = o;
  short_seq.max_seq = 128;  // 110 positions fit, 100 + 20 + 10 + 5 do not
  l = {};
  l.input_spread = 20;
  l.output_spread = 5;
  EXPECT_THROW(serve_load(model(), short_seq, l), InputError);
}

}  // namespace
}  // namespace trnsim::planner
