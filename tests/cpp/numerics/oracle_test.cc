// Checks of the oracle itself, against hand-derived values and against a brute-force search of
// every representable value: the tests are only as good as the oracle.
#include "oracle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "test_util.h"

namespace trnsim::num::oracle {
namespace {

using num::testing::Rng;

double val(const Spec& s, uint64_t code) { return to_double(decode(s, code)); }

TEST(Oracle, HandDerivedValues) {
  EXPECT_EQ(val(spec_fp16(), 0x3C00), 1.0);
  EXPECT_EQ(val(spec_fp16(), 0x7BFF), 65504.0);
  EXPECT_EQ(val(spec_fp16(), 0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(val(spec_fp16(), 0x8000), 0.0);
  EXPECT_TRUE(std::signbit(val(spec_fp16(), 0x8000)));
  EXPECT_EQ(val(spec_bf16(), 0x3F80), 1.0);
  EXPECT_EQ(val(spec_bf16(), 0x7F7F), std::ldexp(255.0, 120));
  EXPECT_EQ(val(spec_tf32(), 0x3F802000), 1.0 + 1.0 / 1024);
  EXPECT_EQ(val(spec_e4m3(), 0x77), 240.0);
  EXPECT_EQ(val(spec_e4m3(), 0x01), std::ldexp(1.0, -9));
  EXPECT_TRUE(decode(spec_e4m3(), 0x78).cls == Exact::kInf);
  EXPECT_TRUE(decode(spec_e4m3(), 0xF9).is_nan());
  EXPECT_EQ(val(spec_e4m3fn(), 0x7E), 448.0);
  EXPECT_EQ(val(spec_e4m3fn(), 0x78), 256.0);  // no inf in E4M3FN
  EXPECT_TRUE(decode(spec_e4m3fn(), 0xFF).is_nan());
  EXPECT_EQ(val(spec_e5m2(), 0x7B), 57344.0);
  EXPECT_EQ(val(spec_e5m2(), 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(val(spec_e3m4(), 0x6F), 15.5);
  EXPECT_EQ(val(spec_e3m4(), 0x01), std::ldexp(1.0, -6));
  EXPECT_EQ(val(spec_cfp8(4, 8), 0x7F), 240.0);
  EXPECT_EQ(val(spec_cfp8(4, 8), 0xFF), -240.0);
  EXPECT_TRUE(decode(spec_cfp8(4, 8), 0x80).is_nan());
  EXPECT_EQ(val(spec_cfp8(5, 0), 0x7F), std::ldexp(7.0, 29));  // 1.75 * 2^31
  EXPECT_EQ(val(spec_cfp8(4, 63), 0x01), std::ldexp(1.0, -65));
  EXPECT_EQ(val(spec_e2m1(), 0x7), 6.0);
  EXPECT_EQ(val(spec_e2m1(), 0x1), 0.5);
  EXPECT_EQ(val(spec_e2m1(), 0xF3), 1.5);  // the high nibble is ignored
  EXPECT_EQ(val(spec_e2m1(), 0xD), -3.0);
  EXPECT_EQ(val(spec_e8m0(), 0x7F), 1.0);
  EXPECT_EQ(val(spec_e8m0(), 0x00), std::ldexp(1.0, -127));
  EXPECT_EQ(val(spec_e8m0(), 0xFE), std::ldexp(1.0, 127));
  EXPECT_TRUE(decode(spec_e8m0(), 0xFF).is_nan());
  EXPECT_EQ(val(spec_int(8, true), 0x80), -128.0);
  EXPECT_EQ(val(spec_int(32, true), 0xFFFFFFFF), -1.0);
  EXPECT_EQ(val(spec_int(32, false), 0xFFFFFFFF), 4294967295.0);
}

TEST(Oracle, MaxFinite) {
  EXPECT_EQ(to_double(max_finite(spec_e4m3())), 240.0);
  EXPECT_EQ(to_double(max_finite(spec_e4m3fn())), 448.0);
  EXPECT_EQ(to_double(max_finite(spec_e5m2())), 57344.0);
  EXPECT_EQ(to_double(max_finite(spec_e3m4())), 15.5);
  EXPECT_EQ(to_double(max_finite(spec_e2m1())), 6.0);
  EXPECT_EQ(to_double(max_finite(spec_fp16())), 65504.0);
  EXPECT_EQ(to_double(max_finite(spec_e8m0())), std::ldexp(1.0, 127));
  EXPECT_EQ(to_double(max_finite(spec_int(16, true))), 32767.0);
}

TEST(Oracle, HandDerivedRounding) {
  const Spec h = spec_fp16();
  auto rne = [&](const Spec& s, double v, Overflow o = Overflow::kInfinity) {
    return round(s, from_double(v), Rounding::kNearestEven, 0, o);
  };
  EXPECT_EQ(rne(h, 1.0 + std::ldexp(1.0, -11)).a.code, 0x3C00u);      // tie to even
  EXPECT_EQ(rne(h, 1.0 + 3 * std::ldexp(1.0, -11)).a.code, 0x3C02u);  // tie to even (up)
  EXPECT_EQ(rne(h, 65520.0).a.code, 0x7C00u);                         // tie above max: inf
  EXPECT_EQ(rne(h, 65519.0).a.code, 0x7BFFu);
  EXPECT_EQ(rne(h, 65520.0, Overflow::kSaturate).a.code, 0x7BFFu);
  EXPECT_EQ(round(h, from_double(1e9), Rounding::kTowardZero, 0, Overflow::kInfinity).a.code,
            0x7BFFu);
  EXPECT_EQ(rne(h, std::ldexp(1.0, -25)).a.code, 0x0000u);  // half of min subnormal: to 0
  EXPECT_EQ(rne(h, -std::ldexp(1.5, -25)).a.code, 0x8001u);
  EXPECT_EQ(rne(spec_e4m3fn(), 464.0).a.code, 0x7Eu);  // tie between 448 and (480): even
  EXPECT_TRUE(rne(spec_e4m3fn(), 465.0).a.nan);
  EXPECT_EQ(rne(spec_e4m3fn(), 465.0, Overflow::kSaturate).a.code, 0x7Eu);
  EXPECT_EQ(rne(spec_e4m3(), 248.0).a.code, 0x78u);  // tie 240 / (256): inf
  EXPECT_EQ(rne(spec_e2m1(), 7.0).a.code, 0x7u);     // no inf, no NaN: max
  EXPECT_EQ(rne(spec_e2m1(), -100.0).a.code, 0xFu);
  EXPECT_EQ(rne(spec_e2m1(), 2.5).a.code, 0x4u);             // tie 2 / 3: even code 0x4
  EXPECT_EQ(rne(spec_cfp8(4, 8), -1e-30).a.code, 0x00u);     // no -0
  EXPECT_EQ(rne(spec_cfp8(4, 8), 1e6).a.code, 0x80u);        // overflow: the NaN
  EXPECT_EQ(rne(spec_e8m0(), 1.5).a.code, 0x80u);            // tie 1 (0x7F) / 2 (0x80): up
  EXPECT_EQ(rne(spec_e8m0(), 3.0).a.code, 0x81u);            // tie 2 (0x80) / 4 (0x81): up
  EXPECT_EQ(rne(spec_e8m0(), 0.75).a.code, 0x7Fu);           // tie 0.5 (0x7E) / 1 (0x7F): up
  EXPECT_TRUE(rne(spec_e8m0(), 0x1.8p127).a.code == 0xFFu);  // tie 2^127 / (2^128): NaN
  EXPECT_EQ(rne(spec_e8m0(), 0x1.8p127, Overflow::kSaturate).a.code, 0xFEu);
  EXPECT_EQ(rne(spec_e8m0(), 0x1.7ffffep1).a.code, 0x80u);  // just below the tie: down
  EXPECT_EQ(rne(spec_int(8, true), -127.5).a.code, 0x80u);
  EXPECT_EQ(rne(spec_int(8, true), 2.5).a.code, 2u);
  EXPECT_EQ(rne(spec_int(8, false), -3.0).a.code, 0u);
  EXPECT_EQ(rne(spec_int(32, true), 1e30).a.code, 0x7FFFFFFFu);
  // SR at a quarter of the gap: up iff floor(0.25 * 2^16) + r >= 2^16, r = top 16 bits.
  const Exact q = from_double(1.0 + std::ldexp(1.0, -12));  // fp16 ulp(1) = 2^-10
  EXPECT_EQ(round(h, q, Rounding::kStochastic, 0xBFFF0000u, Overflow::kInfinity).a.code, 0x3C00u);
  EXPECT_EQ(round(h, q, Rounding::kStochastic, 0xC0000000u, Overflow::kInfinity).a.code, 0x3C01u);
  EXPECT_EQ(round(h, q, Rounding::kStochastic, 0xBFFFFFFFu, Overflow::kInfinity).a.code, 0x3C00u);
}

// Brute force: every non-negative finite value of the format, sorted, and a search for the
// neighbours of |x|. The oracle's quantum arithmetic must agree with it.
struct Table {
  std::vector<std::pair<double, uint64_t>> v;  // (value, code), ascending
};

Table table_of(const Spec& s) {
  Table t;
  for (uint64_t c = 0; c < (1ull << s.bits); ++c) {
    const Exact x = decode(s, c);
    if (x.is_finite() && !x.neg) t.v.push_back({to_double(x), c});
  }
  std::sort(t.v.begin(), t.v.end());
  return t;
}

// RNE / RZ / SR by search, with overflow to max (kSaturate). x: an fp32 value.
uint64_t brute_round(const Spec& s, const Table& t, float xf, Rounding mode, uint32_t random) {
  const double ax = std::fabs(static_cast<double>(xf));
  const bool neg = std::signbit(xf);
  auto it = std::upper_bound(t.v.begin(), t.v.end(), std::pair<double, uint64_t>(ax, ~uint64_t{0}));
  const auto& lo = *(it - 1);  // largest value <= |x|
  const double max = t.v.back().first;
  const uint64_t max_code = t.v.back().second;
  double hi_v;
  uint64_t hi_c;
  if (it != t.v.end()) {
    hi_v = it->first;
    hi_c = it->second;
  } else {  // beyond max: the next value with the exponent range unbounded
    const int e = std::ilogb(max);
    hi_v = max + std::ldexp(1.0, e - s.man_bits);
    hi_c = max_code + 1;
  }
  bool up = false;
  if (lo.first != ax) {
    switch (mode) {
      case Rounding::kTowardZero:
        break;
      case Rounding::kNearestEven: {
        const double twice = 2 * ax, sum = lo.first + hi_v;  // both exact
        up = twice > sum || (twice == sum && (hi_c & 1) == 0);
        break;
      }
      case Rounding::kStochastic: {
        const double frac = (ax - lo.first) / (hi_v - lo.first);  // exact
        const double k = std::floor(std::ldexp(frac, 16));
        up = k + static_cast<double>(random >> 16) >= 65536.0;
        break;
      }
    }
  }
  uint64_t c = up ? hi_c : lo.second;
  if ((up ? hi_v : lo.first) > max) c = max_code;
  if (c == 0 && s.sp == Sp::kFnuz) return 0;
  return neg ? c | (1ull << (s.bits - 1)) : c;
}

TEST(Oracle, AgreesWithBruteForceSearch) {
  std::vector<Spec> specs = {spec_bf16(),     spec_fp16(),      spec_e4m3(),     spec_e4m3fn(),
                             spec_e5m2(),     spec_e3m4(),      spec_e2m1(),     spec_cfp8(4, 8),
                             spec_cfp8(5, 0), spec_cfp8(4, 63), spec_cfp8(5, 40)};
  Rng rng(42);
  for (const Spec& s : specs) {
    const Table t = table_of(s);
    std::vector<float> xs;
    // Every value, every midpoint, and fp32 neighbours of each.
    for (size_t i = 0; i + 1 < t.v.size(); i += num::testing::sample_stride(8)) {
      const float a = static_cast<float>(t.v[i].first);
      const float mid = static_cast<float>((t.v[i].first + t.v[i + 1].first) / 2);
      for (float f : {a, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, HUGE_VALF)}) {
        xs.push_back(f);
        xs.push_back(-f);
      }
    }
    const double max = t.v.back().first;
    const double top = std::min(max * 4, 3.0e38);
    for (size_t i = 0; i < num::testing::count_for_level(20000, 200000);
         ++i) {  // random fp32 values up to 4x max
      const float f = static_cast<float>(top * (static_cast<double>(rng.u32()) / 4294967296.0));
      xs.push_back(f);
    }
    int bad = 0;
    for (float f : xs) {
      for (Rounding mode : {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kStochastic}) {
        const uint32_t r = rng.u32();
        const Expect e = round(s, from_float(f), mode, r, Overflow::kSaturate);
        const uint64_t want = brute_round(s, t, f, mode, r);
        if (e.unspecified || e.has_b || e.a.nan || e.a.code != want) {
          if (++bad < 5) {
            ADD_FAILURE() << s.name << " x=" << from_float(f).str() << " " << static_cast<int>(mode)
                          << ": oracle " << e.str() << " brute " << want;
          }
        }
      }
    }
    EXPECT_EQ(bad, 0) << s.name;
  }
}

}  // namespace
}  // namespace trnsim::num::oracle
