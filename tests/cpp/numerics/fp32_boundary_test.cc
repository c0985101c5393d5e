// FP32 to every narrower format on boundary cases (TestFloat genCases style) and on random
// bit patterns, with RNE, RZ and SR and both overflow policies, against the oracle.
//
// Boundary cases, per target: every representable value (for formats of up to 16 bits; near
// 1.0, max, min normal and min subnormal for TF32 and 32-bit integers), the exact halfway point
// between every pair of adjacent values, one FP32 ulp either side of each, max, max + half an
// ulp, the overflow thresholds, min subnormal / 2 and just above it, +-0, +-inf and NaNs, in
// both signs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <set>
#include <vector>

#include "base/counter_rng.h"
#include "test_util.h"

namespace trnsim::num::testing {
namespace {

using oracle::Exact;

std::vector<FormatCase> targets() {
  std::vector<FormatCase> v = {case_for(Dtype::kBf16), case_for(Dtype::kFp16),
                               case_for(Dtype::kTf32)};
  for (const FormatCase& c : narrow_cases()) v.push_back(c);
  v.push_back(case_cfp8(5, 18));
  v.push_back(case_cfp8(4, 0));
  for (const FormatCase& c : int_cases()) v.push_back(c);
  return v;
}

const oracle::Spec& fp32_spec() {
  static const oracle::Spec s = oracle::spec_fp32();
  return s;
}

// FP32 patterns at and next to the exact value p (both signs): p itself when representable
// and its two FP32 neighbours, else the two FP32 values around it.
void add_fp32_around(const Exact& p, std::set<uint32_t>& out) {
  const oracle::Expect lo =
      oracle::round(fp32_spec(), p, Rounding::kTowardZero, 0, Overflow::kInfinity);
  const uint32_t c = static_cast<uint32_t>(lo.a.code) & 0x7FFFFFFFu;  // |p| rounded down
  const bool exact = oracle::cmp_abs(oracle::decode(fp32_spec(), c), p) == 0;
  std::vector<uint32_t> mags = {c, c + 1};  // c + 1 may be inf: fine
  if (exact && c > 0) mags.push_back(c - 1);
  for (uint32_t m : mags) {
    if (m > 0x7F800000u) continue;
    out.insert(m);
    out.insert(m | 0x80000000u);
  }
}

// The non-negative representable values of a target whose neighbourhoods are swept.
std::vector<Exact> anchor_values(const FormatCase& t) {
  std::vector<Exact> v;
  const oracle::Spec& s = t.ref;
  if (s.is_int()) {
    const int64_t hi = static_cast<int64_t>(oracle::to_double(oracle::max_finite(s)));
    for (int64_t k = -3; k <= 8; ++k) {
      for (int64_t base : {int64_t{0}, hi, int64_t{1} << 24, int64_t{100}}) {
        const int64_t x = base + k;
        if (x >= 0 && x <= hi + 1) v.push_back(Exact::finite(false, static_cast<uint64_t>(x), 0));
      }
    }
    if (s.is_signed) {  // the negative end: |min| and one beyond
      v.push_back(Exact::finite(false, static_cast<uint64_t>(hi) + 1, 0));
      v.push_back(Exact::finite(false, static_cast<uint64_t>(hi) + 2, 0));
    }
    return v;
  }
  if (s.bits <= 16) {  // every value
    for (uint64_t c = 0; c < (1ull << s.bits); ++c) {
      const Exact x = oracle::decode(s, c);
      if (x.is_finite() && !x.neg) v.push_back(x);
    }
    return v;
  }
  // TF32: codes near 0, min normal, 1.0 and max.
  const uint64_t one = oracle::code_of(s, Exact::finite(false, 1, 0)) >> s.code_shift;
  const uint64_t minn = oracle::code_of(s, oracle::min_normal(s)) >> s.code_shift;
  const uint64_t maxc = oracle::max_finite_code(s) >> s.code_shift;
  for (uint64_t base : {uint64_t{0}, minn, one, maxc}) {
    for (int k = -6; k <= 6; ++k) {
      const int64_t c = static_cast<int64_t>(base) + k;
      if (c >= 0 && static_cast<uint64_t>(c) <= maxc) {
        v.push_back(oracle::decode(s, static_cast<uint64_t>(c) << s.code_shift));
      }
    }
  }
  return v;
}

// The value after max with the exponent range unbounded: max + ulp(max) (integers: max + 1).
Exact beyond_max(const oracle::Spec& s) {
  const Exact max = oracle::max_finite(s);
  if (s.is_int()) return Exact::finite(false, max.mag + 1, 0);
  const int man = s.sp == oracle::Sp::kE8M0 ? 0 : s.man_bits;
  const Exact ulp = Exact::finite(false, 1, max.ilog2() - man);
  // max + ulp: the two are at most 2^man apart in scale.
  return oracle::scaled(oracle::midpoint(max, ulp), 1);
}

std::vector<uint64_t> boundary_inputs(const FormatCase& t) {
  std::vector<Exact> vals = anchor_values(t);
  std::sort(vals.begin(), vals.end(),
            [](const Exact& a, const Exact& b) { return oracle::cmp_abs(a, b) < 0; });
  vals.erase(std::unique(vals.begin(), vals.end(),
                         [](const Exact& a, const Exact& b) { return oracle::cmp_abs(a, b) == 0; }),
             vals.end());
  std::set<uint32_t> pats;
  const Exact max = oracle::max_finite(t.ref), next = beyond_max(t.ref);
  for (size_t i = 0; i < vals.size(); ++i) {
    add_fp32_around(vals[i], pats);
    // Halfway to the next anchor (the next representable value for formats of up to 16 bits;
    // anchors far apart, e.g. TF32's groups, are skipped).
    if (i + 1 < vals.size() && (vals[i].is_zero() || vals[i + 1].ilog2() - vals[i].ilog2() < 40)) {
      add_fp32_around(oracle::midpoint(vals[i], vals[i + 1]), pats);
    }
  }
  // Max, half an ulp above (the RNE overflow threshold), the next value (the RZ/SR threshold),
  // twice max.
  for (const Exact& p : {max, oracle::midpoint(max, next), next, oracle::scaled(max, 1)}) {
    add_fp32_around(p, pats);
  }
  if (!t.ref.is_int()) {
    const Exact sub = oracle::min_subnormal(t.ref);
    for (const Exact& p : {oracle::scaled(sub, -1), oracle::scaled(sub, -2),
                           oracle::midpoint(sub, oracle::scaled(sub, -1))}) {
      add_fp32_around(p, pats);
    }
  }
  for (uint32_t special : {0x00000000u, 0x7F800000u, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu,
                           0x7F7FFFFFu, 0x00000001u, 0x00800000u, 0x3F800000u}) {
    pats.insert(special);
    pats.insert(special | 0x80000000u);
  }
  return std::vector<uint64_t>(pats.begin(), pats.end());
}

TEST(Fp32Boundary, EveryTargetEveryMode) {
  const FormatCase src = case_for(Dtype::kFp32);
  size_t total = 0;
  for (const FormatCase& t : targets()) {
    const std::vector<uint64_t> in = boundary_inputs(t);
    for (const RoundOptions& opts : all_round_options(0xB0B, 3)) {
      Mismatches mm("fp32 boundary -> " + t.ref.name + " " + describe(opts));
      check_conversion(src, in, t, opts, mm);
      total += mm.checked_count();
      EXPECT_TRUE(mm.ok()) << mm.report();
    }
  }
  std::printf("fp32 boundary cases checked: %zu\n", total);
}

// SR with fixed random words through encode(): the extremes of r and the tie of the counter.
TEST(Fp32Boundary, StochasticWithFixedRandomWords) {
  size_t total = 0;
  for (const FormatCase& t : targets()) {
    const std::vector<uint64_t> in = thin(boundary_inputs(t), sample_stride(4));
    for (uint32_t r : {0x00000000u, 0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 0x0000FFFFu, 0xFFFF0000u,
                       0x00010000u, 0xC0000000u, 0x3FFFFFFFu}) {
      // Both policies for the words that round up most (overflow is decided after rounding).
      const bool both = r == 0xFFFFFFFFu || r == 0xFFFF0000u || r == 0x80000000u;
      for (Overflow o : {Overflow::kInfinity, Overflow::kSaturate}) {
        if (o == Overflow::kSaturate && !both) continue;
        NumericPolicy p;
        p.overflow = o;
        Mismatches mm("fp32 boundary -> " + t.ref.name + " SR r=" + hex(r));
        for (uint64_t c : in) {
          check_encode(t, static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(c))),
                       Rounding::kStochastic, r, p, mm);
        }
        total += mm.checked_count();
        EXPECT_TRUE(mm.ok()) << mm.report();
      }
    }
  }
  std::printf("fixed-word SR cases checked: %zu\n", total);
}

// Only the top sr_random_bits bits of the word matter; other counts of bits are honoured.
TEST(Fp32Boundary, StochasticRandomBitsCount) {
  Rng rng(77);
  for (int bits : {1, 4, 8, 11, 16, 24, 31}) {
    NumericPolicy p;
    p.sr_random_bits = bits;
    for (const FormatCase& t : {case_for(Dtype::kBf16), case_for(Dtype::kFp8E4M3),
                                case_for(Dtype::kFp8E5M2), case_for(Dtype::kInt8)}) {
      Mismatches mm(t.ref.name + " SR with " + std::to_string(bits) + " random bits");
      const std::vector<uint64_t> in = thin(boundary_inputs(t), sample_stride(8));
      for (uint64_t c : in) {
        const double x = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(c)));
        const uint32_t r = rng.u32();
        check_encode(t, x, Rounding::kStochastic, r, p, mm);
        // Flipping bits below the top `bits` does not change the result.
        const uint32_t low = bits == 32 ? 0 : ((1u << (32 - bits)) - 1);
        const uint64_t a = encode(t.lib, x, Rounding::kStochastic, r, p);
        const uint64_t b = encode(t.lib, x, Rounding::kStochastic, r ^ low, p);
        mm.checked();
        if (a != b && !(oracle::code_is_nan(t.ref, a) && oracle::code_is_nan(t.ref, b))) {
          mm.add("low bits changed the result: " + hex(c) + " r=" + hex(r));
        }
      }
      EXPECT_TRUE(mm.ok()) << mm.report();
    }
  }
}

// Random FP32 bit patterns (fixed seed), half uniform over all patterns and half drawn within
// a few binades of each target's range.
TEST(Fp32Boundary, RandomPatterns) {
  const FormatCase src = case_for(Dtype::kFp32);
  const size_t n = count_for_level(1'000'000, 20'000'000);
  Rng rng(0xF32);
  std::vector<uint64_t> uniform(n);
  for (auto& c : uniform) c = rng.u32();
  size_t total = 0;
  for (const FormatCase& t : targets()) {
    // Focused: exponents from two below min subnormal to two above max.
    int lo_e = -149, hi_e = 127;
    if (t.ref.is_int()) {
      lo_e = -3;
      hi_e = t.ref.bits + 1;
    } else {
      lo_e = std::max(-149, oracle::min_subnormal(t.ref).ilog2() - 2);
      hi_e = std::min(127, oracle::max_finite(t.ref).ilog2() + 2);
    }
    std::vector<uint64_t> focused(n / 4);
    for (auto& c : focused) {
      const int e = lo_e + static_cast<int>(rng.below(static_cast<uint64_t>(hi_e - lo_e + 1)));
      const float f = std::ldexp(1.0f + static_cast<float>(rng.u32() >> 9) * 0x1p-23f, e);
      c = std::bit_cast<uint32_t>(f) | (rng.u32() & 0x80000000u);
    }
    for (const RoundOptions& opts : all_round_options(0xD1CE, 11)) {
      // Both overflow policies on the focused set, kInfinity only on the uniform set (whose
      // overflows are the same boundary over and over) to keep the run short.
      Mismatches mm("random fp32 -> " + t.ref.name + " " + describe(opts));
      check_conversion(src, focused, t, opts, mm);
      if (opts.policy.overflow == Overflow::kInfinity) check_conversion(src, uniform, t, opts, mm);
      total += mm.checked_count();
      EXPECT_TRUE(mm.ok()) << mm.report();
    }
  }
  std::printf("random fp32 cases checked: %zu\n", total);
}

// E8M0 has no even significand to tie to: ties go to the larger power of two (ml_dtypes 0.6,
// PyTorch, LLVM APFloat), hand-written here independently of the oracle.
TEST(E8m0, TiesGoToTheLargerPowerOfTwo) {
  const NumericPolicy inf;
  NumericPolicy sat;
  sat.overflow = Overflow::kSaturate;
  const Format f = e8m0();
  EXPECT_EQ(encode(f, 3.0, Rounding::kNearestEven, 0, inf), 0x81u);
  EXPECT_EQ(encode(f, 6.0, Rounding::kNearestEven, 0, inf), 0x82u);
  EXPECT_EQ(encode(f, 0.75, Rounding::kNearestEven, 0, inf), 0x7Fu);
  EXPECT_EQ(encode(f, 0x1.7ffffep1, Rounding::kNearestEven, 0, inf), 0x80u);
  EXPECT_EQ(encode(f, 0x1.8p-127, Rounding::kNearestEven, 0, inf), 0x01u);
  EXPECT_EQ(encode(f, 0x1.8p127, Rounding::kNearestEven, 0, inf), 0xFFu);  // 2^128: NaN
  EXPECT_EQ(encode(f, 0x1.8p127, Rounding::kNearestEven, 0, sat), 0xFEu);
  EXPECT_EQ(encode(f, 0x1.fp127, Rounding::kTowardZero, 0, inf), 0xFEu);
  EXPECT_EQ(encode(f, 3.0, Rounding::kTowardZero, 0, inf), 0x80u);
}

// Halfway points must not be double-rounded: fp32 values just above a narrow halfway point that
// an intermediate bf16 / fp16 rounding would drag onto the halfway point (ml_dtypes PR #401).
TEST(Fp32Boundary, NoDoubleRounding) {
  Mismatches mm("no double rounding");
  // e4m3fn: 1 + 2^-4 is the halfway point between 1 and 1.125; 1 + 2^-4 + 2^-23 must go up.
  // Through bf16 it would become 1 + 2^-4 and tie to 1.
  const NumericPolicy p;
  for (const FormatCase& t : fp8_cases()) {
    const Exact one = Exact::finite(false, 1, 0);
    const Exact half_ulp = Exact::finite(false, 1, -1 - t.ref.man_bits);
    const Exact mid = oracle::midpoint(oracle::scaled(one, 1), oracle::scaled(half_ulp, 1));
    std::set<uint32_t> pats;
    add_fp32_around(mid, pats);
    for (uint32_t c : pats) {
      check_encode(t, static_cast<double>(std::bit_cast<float>(c)), Rounding::kNearestEven, 0, p,
                   mm);
    }
    // 1 + half_ulp + 2^-23 in particular.
    const float f = 1.0f + std::ldexp(1.0f, -1 - t.ref.man_bits) + 0x1p-23f;
    check_encode(t, static_cast<double>(f), Rounding::kNearestEven, 0, p, mm);
    const uint64_t got = encode(t.lib, static_cast<double>(f), Rounding::kNearestEven, 0, p);
    mm.checked();
    if (oracle::to_double(oracle::decode(t.ref, got)) <= 1.0) {
      mm.add(t.ref.name + ": 1 + half ulp + 2^-23 rounded down (double rounding)");
    }
  }
  EXPECT_TRUE(mm.ok()) << mm.report();
}

}  // namespace
}  // namespace trnsim::num::testing
