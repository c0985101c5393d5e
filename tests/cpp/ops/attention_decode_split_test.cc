// Flash decoding in the attention kernel: a stacked decode token's keys split into shares of
// whole key blocks (two or three lanes), merged at the end. Against the one-pass prefill's
// last row (ops_test_util.h attention tolerance: the shares add in another order), and
// faster than one chain.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "core/timing/timing_run.h"
#include "ops/ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class AttentionDecodeSplitTest : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {
};

// The last row of a prefill over L positions is the decode of token L - 1 over a cache of
// the L - 1 before it (no q/k norm or RoPE: the cache holds k as given).
TEST_P(AttentionDecodeSplitTest, MatchesThePrefillsLastRow) {
  const arch::ChipSpec& spec = chip(std::get<0>(GetParam()));
  const int64_t B = 2, L = std::get<1>(GetParam()), Hq = 8, Hkv = 2, d = 64;
  const ops::AttentionSpec full = attention_shape(B, L, Hq, Hkv, d);
  Inputs in;
  in["q"] = values(B * L * Hq * d, 91, 2.0f);
  in["k"] = values(B * L * Hkv * d, 92, 2.0f);
  in["v"] = values(B * L * Hkv * d, 93, 1.0f);
  const auto want_all = run(spec, ops::attention(spec, full), in);
  auto last = [&](const std::vector<float>& t, int64_t w) {
    std::vector<float> out;
    for (int64_t b = 0; b < B; ++b)
      out.insert(out.end(), t.begin() + (b * L + L - 1) * w, t.begin() + (b * L + L) * w);
    return out;
  };
  ops::AttentionSpec dec = full;
  dec.seq = 1;
  dec.kv_cache = true;
  dec.kv_seq = L;
  const isa::Program p = ops::attention(spec, dec);
  expect_race_free(p, spec);
  Inputs ins;
  ins["q"] = last(in["q"], Hq * d);
  ins["k"] = last(in["k"], Hkv * d);
  ins["v"] = last(in["v"], Hkv * d);
  ins["k_cache"] = in["k"];  // the last row is the step's to write
  ins["v_cache"] = in["v"];
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Hkv * d; ++i)
      ins["k_cache"][(b * L + L - 1) * Hkv * d + i] =
          ins["v_cache"][(b * L + L - 1) * Hkv * d + i] = 0.0f;
  const auto got = run(spec, p, ins);
  std::vector<double> want;
  for (const float x : last(want_all.at("out"), Hq * d)) want.push_back(x);
  EXPECT_TRUE(close(got.at("out"), want, Hq * d, 2e-2, 0.25));
  EXPECT_TRUE(equal(got.at("k_cache"), in["k"], Hkv * d));
}

// Shares interleave: a long cache's decode takes less time than one chain over a key fewer
// (whose partial last block keeps it to one chain: the same blocks, less work), so only the
// split can make it faster.
TEST_P(AttentionDecodeSplitTest, SharesAreFasterThanOneChain) {
  const arch::ChipSpec& spec = chip(std::get<0>(GetParam()));
  const int64_t keys = std::get<1>(GetParam()) * 4;  // whole blocks: split
  const core::TimingResult split =
      core::run_timing(spec, ops::attention(spec, decode_attention(2, keys, false)));
  const core::TimingResult one =
      core::run_timing(spec, ops::attention(spec, decode_attention(2, keys - 1, false)));
  ASSERT_TRUE(split.ok() && one.ok());
  std::printf("%s decode over %lld keys: %.1f us split, %.1f us one chain over a key fewer\n",
              std::get<0>(GetParam()).c_str(), static_cast<long long>(keys),
              static_cast<double>(split.total.v) * 1e-6, static_cast<double>(one.total.v) * 1e-6);
  EXPECT_LT(split.total, one.total);
}

INSTANTIATE_TEST_SUITE_P(Generations, AttentionDecodeSplitTest,
                         ::testing::Combine(::testing::ValuesIn(kGenerations),
                                            ::testing::Values(int64_t{1024}, int64_t{1536})));

}  // namespace
}  // namespace trnsim::kernel_test
