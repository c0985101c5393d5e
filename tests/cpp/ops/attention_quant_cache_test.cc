// The attention kernel with a quantized (FP8) KV cache (ops.h AttentionSpec::cache_dtype):
// what it stores, what it attends to, what it refuses, and the bytes a decode step reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "core/timing/timing_run.h"
#include "numerics/convert.h"
#include "ops/ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

// The FP8 E4M3 the chip's TensorE takes (the OCP e4m3fn where it does, else the legacy e4m3),
// as vLLM Neuron stores its cache: max 448 on trn3, 240 before.
num::Format cache_format(const arch::ChipSpec& spec) {
  const auto& f = spec.numerics.tensor_fp8_formats;
  return num::parse_format(std::find(f.begin(), f.end(), "fp8_e4m3fn") != f.end() ? "fp8_e4m3fn"
                                                                                  : "fp8_e4m3");
}

// x * scale clamped to the format's largest finite value, rounded to nearest even: the code's
// value (what the cache holds).
float quantized(const num::Format& f, float x, double scale) {
  const double c = f.max_finite();
  const double y = std::clamp(static_cast<double>(x) * scale, -c, c);
  return static_cast<float>(num::decode(f, num::encode(f, y, num::Rounding::kNearestEven, 0, {})));
}

std::vector<float> quantized(const num::Format& f, const std::vector<float>& x, double scale) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = quantized(f, x[i], scale);
  return out;
}

// A [B*L, Hkv*d] key cache as the quantized kernel keeps it, transposed: [B*Hkv*d, L].
std::vector<float> transposed(const std::vector<float>& x, int64_t B, int64_t L, int64_t Hkv,
                              int64_t d) {
  std::vector<float> t(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t r = 0; r < L; ++r)
      for (int64_t c = 0; c < Hkv * d; ++c)
        t[static_cast<size_t>((b * Hkv * d + c) * L + r)] =
            x[static_cast<size_t>((b * L + r) * Hkv * d + c)];
  return t;
}

std::vector<float> divided(std::vector<float> x, double scale) {
  for (float& e : x) e = static_cast<float>(e / scale);
  return x;
}

class AttentionQuantCacheTest : public ::testing::TestWithParam<std::tuple<std::string, int64_t>> {
};

// With power-of-two scales every step is exact in the scaled domain, so the kernel's output
// equals the bf16 cache path's on the dequantized cache (each code / scale, exact in bf16)
// with the new tokens' k and v quantized and dequantized the same way (no qk-norm or RoPE, so
// the keys are attended as loaded). The cache's old rows stay; its new rows are the new
// tokens' codes (the keys transposed). v * 256 passes 240 (trn1 / trn2's E4M3) for some
// values: the clamp.
TEST_P(AttentionQuantCacheTest, AttendsAndStoresInTheScaledDomain) {
  const arch::ChipSpec& spec = chip(std::get<0>(GetParam()));
  const num::Format f8 = cache_format(spec);
  const int64_t B = 2, L = std::get<1>(GetParam()), Hq = 4, Hkv = 2, d = 64;
  const double ks = 16, vs = 256;
  for (const int64_t S : {int64_t{1}, int64_t{37}}) {
    SCOPED_TRACE(::testing::Message() << S << " new tokens");
    ops::AttentionSpec s = attention_shape(B, S, Hq, Hkv, d);
    s.kv_cache = true;
    s.kv_seq = L;
    ops::AttentionSpec q8 = s;
    q8.cache_dtype = f8;
    q8.k_scale = ks;
    q8.v_scale = vs;
    const isa::Program p = ops::attention(spec, q8);
    expect_race_free(p, spec);
    Inputs in;
    in["q"] = values(B * S * Hq * d, 81, 2.0f);
    in["k"] = values(B * S * Hkv * d, 82, 2.0f);
    in["v"] = values(B * S * Hkv * d, 83, 1.0f);
    // The cache's rows: codes of random keys and values; the rows the step writes start 0.
    std::vector<float> kc = quantized(f8, values(B * L * Hkv * d, 84, 2.0f), ks);
    std::vector<float> vc = quantized(f8, values(B * L * Hkv * d, 85, 1.0f), vs);
    const std::vector<float> kq = quantized(f8, in["k"], ks), vq = quantized(f8, in["v"], vs);
    std::vector<float> kc_after = kc, vc_after = vc;
    const int64_t row = Hkv * d;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t r = L - S; r < L; ++r)
        for (int64_t i = 0; i < row; ++i) {
          const size_t at = static_cast<size_t>((b * L + r) * row + i);
          const size_t src = static_cast<size_t>((b * S + r - (L - S)) * row + i);
          kc[at] = vc[at] = 0.0f;
          kc_after[at] = kq[src];
          vc_after[at] = vq[src];
        }
    Inputs ins = in;
    ins["k_cache"] = transposed(kc, B, L, Hkv, d);
    ins["v_cache"] = vc;
    const auto got = run(spec, p, ins);
    Inputs ref = in;
    ref["k"] = divided(kq, ks);
    ref["v"] = divided(vq, vs);
    ref["k_cache"] = divided(kc, ks);
    ref["v_cache"] = divided(vc, vs);
    const auto want = run(spec, ops::attention(spec, s), ref);
    EXPECT_TRUE(equal(got.at("out"), want.at("out"), Hq * d)) << "out";
    EXPECT_TRUE(equal(got.at("k_cache"), transposed(kc_after, B, L, Hkv, d), L)) << "k_cache";
    EXPECT_TRUE(equal(got.at("v_cache"), vc_after, row)) << "v_cache";
  }
}

// A decode step reads its cache at one byte an element: the HBM reads drop by the cache's
// bf16 size less its FP8 size, B x L x Hkv x d x 2 (keys and values) bytes, less the new
// token's row the step does not read.
TEST_P(AttentionQuantCacheTest, DecodeReadsTheCacheAtOneByteAnElement) {
  const arch::ChipSpec& spec = chip(std::get<0>(GetParam()));
  const ops::AttentionSpec s = decode_attention(2, std::get<1>(GetParam()) * 8, true);
  ops::AttentionSpec q8 = s;
  q8.cache_dtype = cache_format(spec);
  const core::TimingResult bf = core::run_timing(spec, ops::attention(spec, s));
  const core::TimingResult f8 = core::run_timing(spec, ops::attention(spec, q8));
  ASSERT_TRUE(bf.ok() && f8.ok()) << f8.faults.to_string();
  const int64_t cached = s.batch * (s.kv_seq - 1) * s.kv_heads * s.head_dim * 2;
  EXPECT_EQ(bf.dma.hbm_read_bytes - f8.dma.hbm_read_bytes, cached);
  // And writes the new token's row at one byte too.
  EXPECT_EQ(bf.dma.hbm_write_bytes - f8.dma.hbm_write_bytes, s.batch * s.kv_heads * s.head_dim * 2);
}

TEST(AttentionQuantCache, RefusesWhatItCannotHold) {
  const arch::ChipSpec& spec = chip("trn2");
  ops::AttentionSpec s = attention_shape(1, 1, 4, 2, 64);
  s.cache_dtype = num::parse_format("fp8_e4m3");
  try {  // a cache format without a cache
    ops::attention(spec, s);
    ADD_FAILURE() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cache_dtype"), std::string::npos) << e.what();
  }
  s.kv_cache = true;
  s.kv_seq = 64;
  EXPECT_NO_THROW(ops::attention(spec, s));
  s.k_scale = 0;
  EXPECT_THROW(ops::attention(spec, s), InputError);
  s.k_scale = 1;
  s.v_scale = std::nan("");
  EXPECT_THROW(ops::attention(spec, s), InputError);
  s.v_scale = 1;
  s.cache_dtype = num::int_format(num::Dtype::kInt8);  // not a float format
  EXPECT_THROW(ops::attention(spec, s), InputError);
  s.cache_dtype = num::fp32();  // wider than the model's bf16: not a quantized cache
  EXPECT_THROW(ops::attention(spec, s), InputError);
}

// (1024: a decode step's keys split into two shares, attention_decode_split_test.cc.)
INSTANTIATE_TEST_SUITE_P(Generations, AttentionQuantCacheTest,
                         ::testing::Combine(::testing::ValuesIn(kGenerations),
                                            ::testing::Values(int64_t{200}, int64_t{700},
                                                              int64_t{1024})));

}  // namespace
}  // namespace trnsim::kernel_test
