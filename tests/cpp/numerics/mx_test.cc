// OCP MX block quantisation: the scale rules against hand-derived exponents, quantize_mx and
// dequantize_mx against an oracle quantiser (exact block maximum, exact scaling, one rounding
// with saturation), and the headroom property of the Trainium rule.
#include "numerics/mx.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <vector>

#include "base/counter_rng.h"
#include "test_util.h"

namespace trnsim::num::testing {
namespace {

using oracle::Exact;

struct MxElem {
  FormatCase c;
  int emax;  // exponent of the largest normal (OCP MX v1.0 table 1)
};

std::vector<MxElem> mx_elems() {
  return {{case_for(Dtype::kFp8E4M3Fn), 8},
          {case_for(Dtype::kFp8E5M2), 15},
          {case_for(Dtype::kFp4E2M1), 2}};
}

TEST(MxScale, EmaxMatchesTheElementFormats) {
  for (const MxElem& e : mx_elems()) EXPECT_EQ(oracle::max_finite(e.c.ref).ilog2(), e.emax);
}

TEST(MxScale, HandDerivedExponents) {
  const Format e4 = fp8_e4m3fn(), e5 = fp8_e5m2(), e2 = fp4_e2m1();
  const MxScaleRule ocp = MxScaleRule::kOcp, trn = MxScaleRule::kTrainium;
  // floor(log2 amax) - emax; Trainium one more.
  EXPECT_EQ(mx_scale_exponent(1.0, e4, ocp), -8);
  EXPECT_EQ(mx_scale_exponent(1.0, e4, trn), -7);
  EXPECT_EQ(mx_scale_exponent(448.0, e4, ocp), 0);
  EXPECT_EQ(mx_scale_exponent(448.0, e4, trn), 1);
  EXPECT_EQ(mx_scale_exponent(511.9, e4, ocp), 0);
  EXPECT_EQ(mx_scale_exponent(512.0, e4, ocp), 1);
  EXPECT_EQ(mx_scale_exponent(0.75, e4, ocp), -9);
  EXPECT_EQ(mx_scale_exponent(0.75, e4, trn), -8);
  EXPECT_EQ(mx_scale_exponent(1.0, e5, ocp), -15);
  EXPECT_EQ(mx_scale_exponent(1.0, e5, trn), -14);
  EXPECT_EQ(mx_scale_exponent(57344.0, e5, ocp), 0);
  EXPECT_EQ(mx_scale_exponent(65535.0, e5, trn), 1);
  EXPECT_EQ(mx_scale_exponent(6.0, e2, ocp), 0);
  EXPECT_EQ(mx_scale_exponent(6.0, e2, trn), 1);
  EXPECT_EQ(mx_scale_exponent(1.0, e2, ocp), -2);
  EXPECT_EQ(mx_scale_exponent(0.5, e2, trn), -2);
  EXPECT_EQ(mx_scale_exponent(std::nextafter(8.0, 0.0), e2, ocp), 0);
  EXPECT_EQ(mx_scale_exponent(8.0, e2, ocp), 1);
  // An all-zero block: 2^-127 under both rules.
  for (const Format& f : {e4, e5, e2}) {
    EXPECT_EQ(mx_scale_exponent(0.0, f, ocp), -127);
    EXPECT_EQ(mx_scale_exponent(0.0, f, trn), -127);
  }
  // Clamping to the E8M0 range [-127, 127].
  EXPECT_EQ(mx_scale_exponent(0x1p-120, e4, ocp), -127);  // -128
  EXPECT_EQ(mx_scale_exponent(0x1p-120, e4, trn), -127);  // -127
  EXPECT_EQ(mx_scale_exponent(0x1p-119, e4, ocp), -127);
  EXPECT_EQ(mx_scale_exponent(0x1p-119, e4, trn), -126);
  EXPECT_EQ(mx_scale_exponent(0x1p-149, e2, ocp), -127);
  EXPECT_EQ(mx_scale_exponent(0x1p-1000, e5, trn), -127);
  EXPECT_EQ(mx_scale_exponent(0x1.fffffep127, e2, ocp), 125);
  EXPECT_EQ(mx_scale_exponent(0x1.fffffep127, e2, trn), 126);
  EXPECT_EQ(mx_scale_exponent(0x1p140, e4, ocp), 127);  // 132
  EXPECT_EQ(mx_scale_exponent(0x1p135, e5, ocp), 120);
  EXPECT_EQ(mx_scale_exponent(0x1p143, e5, trn), 127);  // 129
}

TEST(MxScale, EveryBinade) {
  for (const MxElem& e : mx_elems()) {
    for (int k = -160; k <= 160; ++k) {
      for (double m : {1.0, 1.5, std::nextafter(2.0, 0.0)}) {
        const double amax = std::ldexp(m, k);
        const int ocp = std::clamp(k - e.emax, -127, 127);
        const int trn = std::clamp(k - e.emax + 1, -127, 127);
        EXPECT_EQ(mx_scale_exponent(amax, e.c.lib, MxScaleRule::kOcp), ocp) << amax;
        EXPECT_EQ(mx_scale_exponent(amax, e.c.lib, MxScaleRule::kTrainium), trn) << amax;
      }
    }
  }
}

// The oracle quantiser: exact amax of the finite elements, the rule's exponent, then each
// element x / 2^s rounded once with saturation to max finite.
struct Quantised {
  std::vector<oracle::Expect> elems;
  std::vector<uint8_t> scales;
  std::vector<bool> clamped;  // the element's unclamped rounding exceeded max finite
};

Quantised oracle_quantize(const std::vector<float>& x, const MxElem& e, MxScaleRule rule,
                          const RoundOptions& opts) {
  Quantised q;
  for (size_t b = 0; b < x.size() / kMxBlockSize; ++b) {
    Exact amax = Exact::finite(false, 0, 0);
    for (size_t i = b * kMxBlockSize; i < (b + 1) * kMxBlockSize; ++i) {
      const Exact v = oracle::from_float(x[i]);
      if (v.is_finite() && oracle::cmp_abs(v, amax) > 0) amax = v;
    }
    int s = -127;
    if (!amax.is_zero()) {
      s = amax.ilog2() - e.emax + (rule == MxScaleRule::kTrainium ? 1 : 0);
      s = std::clamp(s, -127, 127);
    }
    q.scales.push_back(static_cast<uint8_t>(s + 127));
    for (size_t i = b * kMxBlockSize; i < (b + 1) * kMxBlockSize; ++i) {
      const Exact v = oracle::scaled(oracle::from_float(x[i]), -s);
      const uint32_t r = opts.rounding == Rounding::kStochastic
                             ? random_u32(opts.seed, opts.stream, opts.index_base + i)
                             : 0;
      q.elems.push_back(oracle::round(e.c.ref, v, opts.rounding, r, Overflow::kSaturate,
                                      opts.policy.sr_random_bits));
      bool over = false;
      if (v.is_finite()) {
        // Clamped: the result is max finite while the scaled input is beyond it.
        const oracle::Expect& sat = q.elems.back();
        const Exact got = sat.a.nan ? v : oracle::decode(e.c.ref, sat.a.code);
        over = oracle::cmp_abs(got, oracle::max_finite(e.c.ref)) == 0 &&
               oracle::cmp_abs(v, oracle::max_finite(e.c.ref)) > 0;
      }
      q.clamped.push_back(over);
    }
  }
  return q;
}

// Random blocks: each block has its own magnitude 2^k, elements spread over 2^(k-j), signs,
// zeros and subnormal FP32 values; `bf16_exact` keeps 7 mantissa bits.
std::vector<float> random_blocks(Rng& rng, size_t blocks, bool bf16_exact) {
  std::vector<float> x;
  for (size_t b = 0; b < blocks; ++b) {
    const int k = -150 + static_cast<int>(rng.below(278));  // -150 .. 127
    const bool near_top = rng.below(4) == 0;  // engineer an amax with a mantissa near 2
    for (size_t i = 0; i < kMxBlockSize; ++i) {
      uint32_t mant = rng.u32() >> 9;
      if (bf16_exact) mant &= 0x7F0000u;
      const int j = static_cast<int>(rng.below(16));
      float v = std::ldexp(1.0f + static_cast<float>(mant) * 0x1p-23f, std::min(k - j, 127));
      if (near_top && i == 5)
        v = std::ldexp(bf16_exact ? 1.9921875f : 1.9999999f, std::min(k, 127));
      if (rng.below(16) == 0) v = 0.0f;
      if (rng.below(2) == 0) v = -v;
      x.push_back(v);
    }
  }
  return x;
}

void check_quantize(const std::vector<float>& x, const MxElem& e, MxScaleRule rule,
                    const RoundOptions& opts, Mismatches& mm, size_t* clamps) {
  std::vector<uint8_t> elems(x.size(), 0xEE), scales(x.size() / kMxBlockSize, 0xEE);
  quantize_mx(x.data(), x.size(), e.c.lib, rule, opts, elems.data(), scales.data());
  const Quantised q = oracle_quantize(x, e, rule, opts);
  const std::string rule_name = rule == MxScaleRule::kOcp ? "ocp" : "trainium";
  for (size_t b = 0; b < scales.size(); ++b) {
    mm.checked();
    if (scales[b] != q.scales[b]) {
      mm.add(e.c.ref.name + " " + rule_name + " block " + std::to_string(b) + ": scale " +
             hex(scales[b]) + ", expected " + hex(q.scales[b]));
    }
  }
  for (size_t i = 0; i < x.size(); ++i) {
    mm.checked();
    if (q.clamped[i]) ++*clamps;
    if (!oracle::satisfies(e.c.ref, q.elems[i], elems[i])) {
      mm.add(e.c.ref.name + " " + rule_name + " " + describe(opts) + " x[" + std::to_string(i) +
             "] = " + oracle::from_float(x[i]).str() + " (scale 2^" +
             std::to_string(static_cast<int>(q.scales[i / kMxBlockSize]) - 127) + "): element " +
             hex(elems[i]) + ", expected " + q.elems[i].str());
    }
  }
}

TEST(Mx, QuantizeRandomBlocksAgainstTheOracle) {
  Rng rng(0x3C);
  const size_t blocks = count_for_level(4096, 65536);
  for (bool bf16_exact : {false, true}) {
    const std::vector<float> x = random_blocks(rng, blocks, bf16_exact);
    for (const MxElem& e : mx_elems()) {
      for (MxScaleRule rule : {MxScaleRule::kOcp, MxScaleRule::kTrainium}) {
        for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kStochastic}) {
          RoundOptions opts;
          opts.rounding = r;
          opts.seed = 11;
          opts.stream = 2;
          opts.index_base = 640;
          Mismatches mm("quantize_mx " + e.c.ref.name);
          size_t clamps = 0;
          check_quantize(x, e, rule, opts, mm, &clamps);
          EXPECT_TRUE(mm.ok()) << mm.report();
          if (rule == MxScaleRule::kOcp) {
            // The engineered blocks (amax mantissa near 2) must make the OCP rule clamp.
            EXPECT_GT(clamps, 0u) << e.c.ref.name << " " << mode_name(r);
          }
        }
      }
    }
  }
}

// The Trainium rule leaves one binade of headroom: amax / 2^s < 2^emax <= max finite, and a
// rounding can at most reach 2^emax, so no element is ever clamped and none reaches max finite
// (max is above 2^emax for all three formats). Proven for any finite input; checked here on
// BF16-exact and general FP32 blocks in every mode.
TEST(Mx, TrainiumRuleNeverSaturates) {
  Rng rng(0x7A);
  const size_t blocks = count_for_level(4096, 65536);
  for (bool bf16_exact : {true, false}) {
    const std::vector<float> x = random_blocks(rng, blocks, bf16_exact);
    for (const MxElem& e : mx_elems()) {
      for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kStochastic}) {
        RoundOptions opts;
        opts.rounding = r;
        std::vector<uint8_t> elems(x.size()), scales(x.size() / kMxBlockSize);
        quantize_mx(x.data(), x.size(), e.c.lib, MxScaleRule::kTrainium, opts, elems.data(),
                    scales.data());
        const double limit = std::ldexp(1.0, e.emax);
        size_t at_max = 0, above = 0;
        for (uint8_t c : elems) {
          const double v = std::fabs(decode(e.c.lib, c));
          if (v == e.c.lib.max_finite()) ++at_max;
          if (v > limit) ++above;
        }
        EXPECT_EQ(at_max, 0u) << e.c.ref.name << " " << mode_name(r);
        EXPECT_EQ(above, 0u) << e.c.ref.name << " " << mode_name(r);
        const Quantised q = oracle_quantize(x, e, MxScaleRule::kTrainium, opts);
        size_t clamps = 0;
        for (bool c : q.clamped) clamps += c;
        EXPECT_EQ(clamps, 0u) << "oracle: " << e.c.ref.name;
      }
    }
  }
}

// A block whose amax has a mantissa near 2: OCP clamps it to max, Trainium does not.
TEST(Mx, OcpRuleSaturatesWhereTrainiumDoesNot) {
  for (const MxElem& e : mx_elems()) {
    std::vector<float> x(kMxBlockSize, 0.25f);
    x[3] = 1.96875f;  // 1.96875 * 2^emax rounds above max finite in all three formats
    x[4] = -1.96875f;
    std::vector<uint8_t> elems(kMxBlockSize), scales(1);
    RoundOptions opts;
    quantize_mx(x.data(), x.size(), e.c.lib, MxScaleRule::kOcp, opts, elems.data(), scales.data());
    EXPECT_EQ(scales[0], 127 - e.emax);
    EXPECT_EQ(decode(e.c.lib, elems[3]), e.c.lib.max_finite()) << e.c.ref.name;
    EXPECT_EQ(decode(e.c.lib, elems[4]), -e.c.lib.max_finite()) << e.c.ref.name;
    quantize_mx(x.data(), x.size(), e.c.lib, MxScaleRule::kTrainium, opts, elems.data(),
                scales.data());
    EXPECT_EQ(scales[0], 128 - e.emax);
    EXPECT_LT(decode(e.c.lib, elems[3]), e.c.lib.max_finite()) << e.c.ref.name;
    EXPECT_EQ(decode(e.c.lib, elems[3]), std::ldexp(1.0, e.emax)) << e.c.ref.name;
  }
}

TEST(Mx, AllZeroBlockAndNaN) {
  for (const MxElem& e : mx_elems()) {
    SCOPED_TRACE(e.c.ref.name);
    std::vector<float> x(2 * kMxBlockSize, 0.0f);
    x[40] = std::nanf("");
    x[41] = 3.0f;
    std::vector<uint8_t> elems(x.size()), scales(2);
    quantize_mx(x.data(), x.size(), e.c.lib, MxScaleRule::kTrainium, RoundOptions{}, elems.data(),
                scales.data());
    EXPECT_EQ(scales[0], 0);  // 2^-127
    for (size_t i = 0; i < kMxBlockSize; ++i) EXPECT_EQ(decode(e.c.lib, elems[i]), 0.0);
    if (e.c.lib.has_nan()) {
      EXPECT_TRUE(std::isnan(decode(e.c.lib, elems[40])));
      EXPECT_EQ(scales[1], 127 + 1 - e.emax + 1);  // amax 3 (the NaN is not a magnitude)
    } else {
      EXPECT_EQ(scales[1], 0xFF) << "E2M1 has no NaN: the scale becomes NaN";
    }
  }
}

TEST(Mx, DequantizeAgainstTheOracle) {
  Rng rng(0xDE);
  const size_t n = 32 * 2048;
  for (const MxElem& e : mx_elems()) {
    std::vector<uint8_t> elems(n), scales(n / kMxBlockSize);
    const uint32_t mask = e.c.ref.bits == 4 ? 0xF : 0xFF;
    for (auto& c : elems) c = static_cast<uint8_t>(rng.u32() & mask);
    for (size_t b = 0; b < scales.size(); ++b) scales[b] = static_cast<uint8_t>(b & 0xFF);
    std::vector<float> out(n);
    dequantize_mx(elems.data(), scales.data(), n, e.c.lib, out.data());
    const oracle::Spec f32 = oracle::spec_fp32();
    Mismatches mm("dequantize_mx " + e.c.ref.name);
    for (size_t i = 0; i < n; ++i) {
      const Exact sc = oracle::decode(oracle::spec_e8m0(), scales[i / kMxBlockSize]);
      const Exact el = oracle::decode(e.c.ref, elems[i]);
      oracle::Expect want;
      if (sc.is_nan() || el.is_nan()) {
        want.a.nan = true;
        want.a.check_sign = false;
      } else {
        // Exact product, then FP32 (exact for every in-range case; overflow gives inf).
        want = oracle::round(f32, oracle::scaled(el, sc.exp), Rounding::kNearestEven, 0,
                             Overflow::kInfinity);
      }
      const uint32_t got = std::bit_cast<uint32_t>(out[i]);
      mm.checked();
      if (!oracle::satisfies(f32, want, got)) {
        mm.add(hex(elems[i]) + " x scale " + hex(scales[i / kMxBlockSize]) + ": got " + hex(got) +
               ", expected " + want.str());
      }
    }
    EXPECT_TRUE(mm.ok()) << mm.report();
  }
}

// quantize then dequantize: the result is the oracle's element times the scale.
TEST(Mx, RoundTripIsTheOracleValue) {
  Rng rng(0x99);
  const std::vector<float> x = random_blocks(rng, 512, false);
  for (const MxElem& e : mx_elems()) {
    std::vector<uint8_t> elems(x.size()), scales(x.size() / kMxBlockSize);
    quantize_mx(x.data(), x.size(), e.c.lib, MxScaleRule::kOcp, RoundOptions{}, elems.data(),
                scales.data());
    std::vector<float> back(x.size());
    dequantize_mx(elems.data(), scales.data(), x.size(), e.c.lib, back.data());
    const Quantised q = oracle_quantize(x, e, MxScaleRule::kOcp, RoundOptions{});
    size_t bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const Exact v = oracle::scaled(oracle::decode(e.c.ref, q.elems[i].a.code),
                                     static_cast<int>(q.scales[i / kMxBlockSize]) - 127);
      const oracle::Expect want =
          oracle::round(oracle::spec_fp32(), v, Rounding::kNearestEven, 0, Overflow::kInfinity);
      if (std::bit_cast<uint32_t>(back[i]) != want.a.code) ++bad;
    }
    EXPECT_EQ(bad, 0u) << e.c.ref.name;
  }
}

}  // namespace
}  // namespace trnsim::num::testing
