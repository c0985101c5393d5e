// Smoke test of the numerics layer: a handful of known codes per format, and the fast paths of
// convert() against the generic funnel (the exhaustive oracle tests live beside this file).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/counter_rng.h"
#include "base/error.h"
#include "numerics/convert.h"
#include "numerics/format.h"
#include "numerics/mx.h"
#include "numerics/round_pack.h"

namespace trnsim::num {
namespace {

uint64_t rne(const Format& f, double v, NumericPolicy p = {}) {
  return encode(f, v, Rounding::kNearestEven, 0, p);
}

TEST(NumericsSmoke, KnownCodes) {
  EXPECT_EQ(rne(bf16(), 1.0), 0x3F80u);
  EXPECT_EQ(rne(fp8_e4m3(), 240.0), 0x77u);
  EXPECT_EQ(rne(fp8_e4m3(), 248.0), 0x78u);  // tie above max rounds to the inf code
  EXPECT_EQ(rne(fp8_e4m3fn(), 448.0), 0x7Eu);
  EXPECT_EQ(rne(fp8_e4m3fn(), 464.0), 0x7Eu);  // tie to even stays at max
  EXPECT_EQ(rne(fp8_e4m3fn(), 1e6), 0x7Fu);    // overflow -> NaN (no inf)
  EXPECT_EQ(rne(fp8_e5m2(), 57344.0), 0x7Bu);
  EXPECT_EQ(rne(fp4_e2m1(), 6.0), 0x7u);
  EXPECT_EQ(rne(fp4_e2m1(), -100.0), 0xFu);  // E2M1 overflow saturates
  EXPECT_EQ(rne(e8m0(), 1.0), 0x7Fu);
  EXPECT_EQ(rne(e8m0(), 1.5), 0x80u);   // significand tie rounds up (ml_dtypes, PyTorch)
  EXPECT_EQ(rne(e8m0(), 0.0), 0xFFu);   // no zero
  EXPECT_EQ(rne(cfp8(), -0.0), 0x00u);  // fnuz: no negative zero
  EXPECT_EQ(rne(int_format(Dtype::kInt8), -1000.0), 0x80u);
  EXPECT_EQ(rne(int_format(Dtype::kInt8), 2.5), 2u);
  EXPECT_EQ(rne(int_format(Dtype::kUint8), -3.0), 0u);
  // TF32 keeps 10 mantissa bits: 1 + 2^-11 is a tie and goes to even (1.0); just above goes up.
  EXPECT_EQ(rne(tf32(), 1.0 + std::ldexp(1, -11)), 0x3F800000u);
  EXPECT_EQ(rne(tf32(), 1.0 + std::ldexp(3, -11)), 0x3F804000u);
  EXPECT_EQ(decode(tf32(), 0x3F802000u), 1.0 + std::ldexp(1, -10));
}

TEST(NumericsSmoke, RoundPackSticky) {
  // 0x101 * 2^-8 = 1 + 2^-8 is a bf16 tie: even goes down; any sticky bit below goes up.
  EXPECT_EQ(round_pack(bf16(), false, -8, 0x101, false, Rounding::kNearestEven, 0, {}), 0x3F80u);
  EXPECT_EQ(round_pack(bf16(), false, -8, 0x101, true, Rounding::kNearestEven, 0, {}), 0x3F81u);
  EXPECT_EQ(round_pack(bf16(), true, -8, 0x101, true, Rounding::kTowardZero, 0, {}), 0xBF80u);
}

TEST(NumericsSmoke, Limits) {
  EXPECT_EQ(fp8_e4m3().max_finite(), 240.0);
  EXPECT_EQ(fp8_e4m3fn().max_finite(), 448.0);
  EXPECT_EQ(fp8_e3m4().max_finite(), 15.5);
  EXPECT_EQ(cfp8().max_finite(), 240.0);
  EXPECT_EQ(cfp8(5, 16).max_finite(), 57344.0);
  EXPECT_EQ(e8m0().max_finite(), std::ldexp(1, 127));
  EXPECT_EQ(e8m0().min_normal(), std::ldexp(1, -127));
  EXPECT_EQ(fp32().min_subnormal(), std::ldexp(1, -149));
  for (const Format& f : builtin_formats()) EXPECT_EQ(parse_format(f.name()), f) << f.name();
  EXPECT_EQ(parse_format("cfp8_e5m2_b18"), cfp8(5, 18));
  EXPECT_EQ(parse_format("float8_e8m0fnu"), e8m0());
  EXPECT_THROW(parse_format("fp7"), InputError);
  EXPECT_THROW(parse_format("cfp8_b64"), InputError);
}

TEST(NumericsSmoke, StochasticRounding) {
  NumericPolicy p;
  p.sr_random_bits = 2;
  // 1 + 2^-9 is a quarter of the bf16 gap above 1: up iff top two random bits + 01b >= 100b.
  const double v = 1.0 + std::ldexp(1, -9);
  EXPECT_EQ(encode(bf16(), v, Rounding::kStochastic, 0xBFFFFFFFu, p), 0x3F80u);
  EXPECT_EQ(encode(bf16(), v, Rounding::kStochastic, 0xC0000000u, p), 0x3F81u);
  // Exact values never move.
  EXPECT_EQ(encode(bf16(), 1.0, Rounding::kStochastic, 0xFFFFFFFFu, p), 0x3F80u);
  // convert() draws element i from (seed, stream, index_base + i).
  const std::vector<double> in(64, v);
  std::vector<uint16_t> out(64);
  RoundOptions o;
  o.rounding = Rounding::kStochastic;
  o.seed = 5;
  o.stream = 9;
  o.index_base = 100;
  convert(fp64(), in.data(), bf16(), out.data(), in.size(), o);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], encode(bf16(), v, Rounding::kStochastic, random_u32(5, 9, 100 + i), {}));
}

// The fp32 <-> bf16 fast paths equal the generic funnel (decode + encode).
TEST(NumericsSmoke, FastPathsMatchFunnel) {
  std::vector<uint32_t> in;
  for (uint32_t i = 0; i < 4096; ++i) in.push_back(random_u32(1, 2, i));
  for (uint32_t b : {0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0xFFC00001u, 0x00008000u, 0x807FFFFFu})
    in.push_back(b);
  for (NanMode nan : {NanMode::kPropagate, NanMode::kCanonical}) {
    RoundOptions o;
    o.policy.nan = nan;
    std::vector<uint16_t> out(in.size());
    convert(fp32(), in.data(), bf16(), out.data(), in.size(), o);
    for (size_t i = 0; i < in.size(); ++i)
      EXPECT_EQ(out[i], encode(bf16(), decode(fp32(), in[i]), Rounding::kNearestEven, 0, o.policy))
          << std::hex << in[i];
    std::vector<uint16_t> codes(65536);
    for (uint32_t c = 0; c < 65536; ++c) codes[c] = static_cast<uint16_t>(c);
    std::vector<uint32_t> wide(65536);
    convert(bf16(), codes.data(), fp32(), wide.data(), codes.size(), o);
    for (uint32_t c = 0; c < 65536; ++c)
      EXPECT_EQ(wide[c], encode(fp32(), decode(bf16(), c), Rounding::kNearestEven, 0, o.policy))
          << std::hex << c;
  }
}

TEST(NumericsSmoke, Mx) {
  EXPECT_EQ(mx_scale_exponent(448.0, fp8_e4m3fn(), MxScaleRule::kOcp), 0);
  EXPECT_EQ(mx_scale_exponent(448.0, fp8_e4m3fn(), MxScaleRule::kTrainium), 1);
  EXPECT_EQ(mx_scale_exponent(0.0, fp4_e2m1(), MxScaleRule::kTrainium), -127);
  std::vector<float> x(32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 16.0f;
  std::vector<uint8_t> codes(32), scales(1);
  quantize_mx(x.data(), x.size(), fp8_e4m3fn(), MxScaleRule::kOcp, {}, codes.data(), scales.data());
  EXPECT_EQ(scales[0], 127 + 4 - 8);  // amax 16: floor(log2) = 4, emax 8
  std::vector<float> y(32);
  dequantize_mx(codes.data(), scales.data(), y.size(), fp8_e4m3fn(), y.data());
  EXPECT_EQ(y, x);  // small integers are exact
}

}  // namespace
}  // namespace trnsim::num
