// Prefill modes of planner::serve and serve_load. Prefix caching: the prefill runs the
// prompt's uncached rest at its bucket, its attention reading the cached prefix, so TTFT falls
// with the prefix but stays above a fresh prompt of the rest's length (more keys); decode is
// unchanged; a prefix that leaves nothing to prefill, or overflows the compiled sequence, is
// refused. Chunked prefill: a prompt is steps of the chunk graph, each after the positions
// before it; under a load the live sequences decode in those steps.
#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/model_config.h"
#include "planner/serve.h"
#include "planner/serve_load.h"

namespace trnsim::planner {
namespace {

ServeOptions tiny(int64_t input, int64_t prefix) {
  ServeOptions o;
  o.chip = "trn2";
  o.tp = 2;
  o.input_tokens = input;
  o.output_tokens = 8;
  o.cached_prefix = prefix;
  return o;
}

const graph::ModelConfig& model() {
  static const graph::ModelConfig m = graph::load_model_config("tiny-llama");
  return m;
}

TEST(PrefixCache, ThePrefillRunsTheUncachedRest) {
  const ServeResult whole = serve(model(), tiny(1024, 0));
  const ServeResult cached = serve(model(), tiny(1024, 768));
  const ServeResult fresh = serve(model(), tiny(256, 0));
  EXPECT_EQ(whole.bucket, 1024);
  EXPECT_EQ(cached.bucket, 256);
  EXPECT_EQ(cached.cached_prefix, 768);
  EXPECT_EQ(cached.prefill.seq, 256);
  EXPECT_LT(cached.ttft_ms, whole.ttft_ms);
  EXPECT_GT(cached.ttft_ms, fresh.ttft_ms);  // its attention also reads the 768 cached keys
  EXPECT_DOUBLE_EQ(cached.tpot_ms, whole.tpot_ms);
  EXPECT_EQ(cached.to_json()["cached_prefix"], 768);
  EXPECT_NE(cached.text().find("prefix caching"), std::string::npos);
}

TEST(PrefixCache, UnderALoad) {
  LoadOptions l;
  l.concurrency = 2;
  l.requests = 4;
  l.input_spread = 50;
  const LoadResult whole = serve_load(model(), tiny(600, 0), l);
  const LoadResult cached = serve_load(model(), tiny(600, 512), l);
  EXPECT_LT(cached.ttft_ms.mean, whole.ttft_ms.mean);
  EXPECT_EQ(cached.to_json()["cached_prefix"], 512);
  l.input_spread = 100;  // the shortest prompt, 500 tokens, would be all cache
  EXPECT_THROW(serve_load(model(), tiny(600, 512), l), InputError);
}

TEST(PrefixCache, Refusals) {
  EXPECT_THROW(serve(model(), tiny(256, 256)), InputError);  // nothing left to prefill
  EXPECT_THROW(serve(model(), tiny(256, -1)), InputError);
  ServeOptions o = tiny(1000, 900);
  o.max_seq = 1024;
  o.bucket = 256;  // 900 cached + 256 positions overflow the compiled 1,024
  EXPECT_THROW(serve(model(), o), InputError);
}

TEST(ChunkedPrefill, APromptIsStepsOfTheChunkGraph) {
  ServeOptions o = tiny(1024, 0);
  const ServeResult whole = serve(model(), o);
  o.prefill_chunk = 256;
  const ServeResult chunked = serve(model(), o);
  EXPECT_EQ(chunked.prefill_chunk, 256);
  EXPECT_GT(chunked.ttft_ms, whole.ttft_ms);  // four graphs' fixed costs and weight reads
  EXPECT_LT(chunked.ttft_ms, 4 * whole.ttft_ms);
  EXPECT_DOUBLE_EQ(chunked.tpot_ms, whole.tpot_ms);
  EXPECT_NE(chunked.text().find("chunked prefill"), std::string::npos);
  // With a cached prefix the chunks start after it: fewer of them.
  o.cached_prefix = 512;
  EXPECT_LT(serve(model(), o).ttft_ms, chunked.ttft_ms);
}

TEST(ChunkedPrefill, UnderALoadDecodesRideInTheChunks) {
  ServeOptions o = tiny(1024, 0);
  o.output_tokens = 16;
  o.prefill_chunk = 256;
  LoadOptions l;
  l.concurrency = 2;
  l.requests = 4;
  const LoadResult r = serve_load(model(), o, l);
  EXPECT_EQ(r.prefills, 4);
  for (const RequestRecord& q : r.requests) {
    EXPECT_GT(q.first_token_ms, q.arrival_ms);
    EXPECT_GT(q.done_ms, q.first_token_ms);
  }
  // The first request meets an empty server: its TTFT is the batch mode's chunked prefill.
  EXPECT_NEAR(r.requests[0].ttft_ms(), serve(model(), o).ttft_ms, 1e-9);
  EXPECT_EQ(r.to_json()["prefill_chunk"], 256);
}

TEST(ChunkedPrefill, Refusals) {
  ServeOptions o = tiny(1024, 0);
  o.prefill_chunk = 64;  // less than a tile of tokens
  EXPECT_THROW(serve(model(), o), InputError);
  o.prefill_chunk = 256;
  o.batch = 2;
  o.ctx_batch = 2;  // one prompt at a time
  EXPECT_THROW(serve(model(), o), InputError);
  o.batch = 1;
  o.ctx_batch = 0;
  o.compiled_batch = 256;  // no slot left for a prompt
  EXPECT_THROW(serve(model(), o), InputError);
}

}  // namespace
}  // namespace trnsim::planner
