// Stochastic rounding as a random process: rates of rounding up, unbiasedness, the Neuron
// documentation's accumulation example (HARDWARE.md section 5) and determinism of the
// (seed, stream, index) contract. The bit-exact SR rule is checked against the oracle in the
// conversion tests; these tests only rely on probabilities.
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

RoundOptions sr_options(uint64_t seed, uint64_t stream, uint64_t base = 0) {
  RoundOptions o;
  o.rounding = Rounding::kStochastic;
  o.seed = seed;
  o.stream = stream;
  o.index_base = base;
  return o;
}

// n copies of the FP32 value x converted to `to` with SR; the fraction rounded away from zero.
double rate_up(const FormatCase& to, float x, size_t n, uint64_t seed) {
  const FormatCase src = case_for(Dtype::kFp32);
  const std::vector<uint64_t> in(n, std::bit_cast<uint32_t>(x));
  const std::vector<uint64_t> out = convert_codes(src.lib, in, to.lib, sr_options(seed, 5));
  const Exact lo = [&] {
    const oracle::Expect e =
        oracle::round(to.ref, oracle::from_float(x), Rounding::kTowardZero, 0, Overflow::kSaturate);
    return oracle::decode(to.ref, e.a.code);
  }();
  size_t up = 0;
  for (uint64_t c : out) {
    const Exact v = oracle::decode(to.ref, c);
    if (!(v == lo)) ++up;
  }
  return static_cast<double>(up) / static_cast<double>(n);
}

// The exact probability of rounding away from zero: floor(frac * 2^16) / 2^16, frac the
// position of |x| in its gap.
double sr_probability(const FormatCase& to, float x) {
  const Exact ex = oracle::from_float(x);
  const double lo = std::fabs(oracle::to_double(oracle::decode(
      to.ref, oracle::round(to.ref, ex, Rounding::kTowardZero, 0, Overflow::kSaturate).a.code)));
  // The rounding-up neighbour: the result of SR with the largest random word.
  const double hi = std::fabs(oracle::to_double(oracle::decode(
      to.ref,
      oracle::round(to.ref, ex, Rounding::kStochastic, 0xFFFFFFFFu, Overflow::kSaturate).a.code)));
  if (hi == lo) return 0.0;
  const double frac = (std::fabs(static_cast<double>(x)) - lo) / (hi - lo);  // exact
  return std::floor(frac * 65536.0) / 65536.0;
}

TEST(Stochastic, RateOfRoundingUpMatchesTheGapFraction) {
  const size_t n = nightly() ? 2'000'000 : 100'000;  // 1e5 indices in every build
  struct Case {
    FormatCase to;
    float base, ulp;
  };
  const std::vector<Case> cases = {
      {case_for(Dtype::kBf16), 1.0f, 0x1p-7f},
      {case_for(Dtype::kBf16), -3.0f, -0x1p-6f},
      {case_for(Dtype::kFp16), 1024.0f, 1.0f},
      {case_for(Dtype::kFp16), 0x1p-24f, 0x1p-24f},  // subnormal gap
      {case_for(Dtype::kFp8E4M3), 1.0f, 0.125f},
      {case_for(Dtype::kFp8E5M2), -0.5f, -0.125f},
      {case_for(Dtype::kFp4E2M1), 2.0f, 1.0f},
      {case_for(Dtype::kInt8), -7.0f, -1.0f},
  };
  int k = 0;
  for (const Case& c : cases) {
    for (double frac : {0.0, 1.0 / 16, 0.1, 0.25, 1.0 / 3, 0.5, 0.75, 0.9, 15.0 / 16}) {
      const float x = c.base + static_cast<float>(frac) * c.ulp;
      const double p = sr_probability(c.to, x);
      const double rate = rate_up(c.to, x, n, 1000 + k++);
      const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(n));
      EXPECT_NEAR(rate, p, 4 * sigma + 1e-12)
          << c.to.ref.name << " x=" << x << " frac=" << frac << " p=" << p;
      if (frac != 0.0) EXPECT_NEAR(p, frac, 1e-4) << "the test's value is not at the fraction";
    }
  }
}

TEST(Stochastic, MeanErrorTendsToZero) {
  const size_t n = count_for_level(1'000'000, 10'000'000);
  Rng rng(9);
  const FormatCase src = case_for(Dtype::kFp32);
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp8E4M3, Dtype::kFp8E5M2}) {
    const FormatCase to = case_for(d);
    // Values in [1, 2) (one gap size u) in both signs.
    std::vector<uint64_t> in(n);
    for (auto& c : in) c = 0x3F800000u | (rng.u32() >> 9) | (rng.u32() & 0x80000000u);
    const std::vector<uint64_t> out = convert_codes(src.lib, in, to.lib, sr_options(3, 4));
    const double u = std::ldexp(1.0, -to.ref.man_bits);
    double sum = 0, sum_rne = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(in[i])));
      sum += (decode(to.lib, out[i]) - x) / u;
      const uint64_t rne = encode(to.lib, x, Rounding::kNearestEven, 0, NumericPolicy{});
      sum_rne += std::fabs(decode(to.lib, rne) - x) / u;
    }
    const double mean = sum / static_cast<double>(n);
    // Each error is within one gap with variance <= 1/4 gap^2: 4 sigma of the mean.
    EXPECT_LT(std::fabs(mean), 4 * 0.5 / std::sqrt(static_cast<double>(n))) << to.ref.name;
    // Sanity: RNE's mean absolute error is about a quarter of a gap.
    EXPECT_NEAR(sum_rne / static_cast<double>(n), 0.25, 0.01) << to.ref.name;
  }
  // One value repeated: the mean of the rounded results converges to it.
  const FormatCase bf = case_for(Dtype::kBf16);
  const float x = 1.0f + 0.3f * 0x1p-7f;
  const std::vector<uint64_t> in(n, std::bit_cast<uint32_t>(x));
  const std::vector<uint64_t> out = convert_codes(src.lib, in, bf.lib, sr_options(5, 6));
  double sum = 0;
  for (uint64_t c : out) sum += decode(bf.lib, c);
  EXPECT_NEAR(sum / static_cast<double>(n), static_cast<double>(x),
              4 * 0.5 * 0x1p-7 / std::sqrt(n));
}

// HARDWARE.md section 5 / the Neuron rounding-modes page: an fp16 accumulator at 1024 plus 0.5,
// 2048 times. Each add is exact in double, then rounded to fp16 (a new index per step).
double accumulate(Rounding mode, uint64_t seed, bool via_convert) {
  const FormatCase h = case_for(Dtype::kFp16);
  const FormatCase d = case_for(Dtype::kFp64);
  uint64_t acc = encode(h.lib, 1024.0, Rounding::kNearestEven, 0, NumericPolicy{});
  for (uint64_t step = 0; step < 2048; ++step) {
    const double sum = decode(h.lib, acc) + 0.5;
    if (via_convert) {
      RoundOptions o = sr_options(seed, 17, step);
      o.rounding = mode;
      acc = convert_codes(d.lib, {std::bit_cast<uint64_t>(sum)}, h.lib, o)[0];
    } else {
      acc = encode(h.lib, sum, mode, random_u32(seed, 17, step), NumericPolicy{});
    }
  }
  return decode(h.lib, acc);
}

TEST(Stochastic, Fp16AccumulationExampleFromTheNeuronDocs) {
  EXPECT_EQ(accumulate(Rounding::kNearestEven, 0, false), 1024.0);
  EXPECT_EQ(accumulate(Rounding::kNearestEven, 0, true), 1024.0);
  const double sr = accumulate(Rounding::kStochastic, 0, false);
  std::printf("fp16 1024 + 0.5 x 2048: RNE 1024, SR (seed 0) %g (Neuron docs: 2056 on hardware)\n",
              sr);
  EXPECT_NEAR(sr, 2048.0, 64.0);
  EXPECT_EQ(accumulate(Rounding::kStochastic, 0, true), sr) << "encode and convert disagree";
  // Over 16 seeds the mean is close to 2048 (each run has a standard deviation of about 20).
  double sum = 0;
  for (uint64_t seed = 1; seed <= 16; ++seed) sum += accumulate(Rounding::kStochastic, seed, false);
  std::printf("mean over 16 seeds: %g\n", sum / 16);
  EXPECT_NEAR(sum / 16, 2048.0, 24.0);
}

TEST(Stochastic, DeterministicInSeedStreamAndIndex) {
  const FormatCase src = case_for(Dtype::kFp32);
  const size_t n = 10000;
  Rng rng(123);
  std::vector<uint64_t> in(n);
  for (auto& c : in) c = 0x3F800000u | (rng.u32() >> 9) | (rng.u32() & 0x80000000u);
  for (const FormatCase& to : {case_for(Dtype::kBf16), case_for(Dtype::kFp8E4M3Fn),
                               case_for(Dtype::kFp4E2M1), case_for(Dtype::kInt16)}) {
    SCOPED_TRACE(to.ref.name);
    const uint64_t base = 1'000'000'007;
    const std::vector<uint64_t> whole = convert_codes(src.lib, in, to.lib, sr_options(42, 9, base));
    // The same call again.
    EXPECT_EQ(convert_codes(src.lib, in, to.lib, sr_options(42, 9, base)), whole);
    // In chunks of varied sizes, converted last chunk first, with index_base offsets.
    const std::vector<size_t> cuts = {0, 1, 8, 1000, 1001, 4096, 9999, n};
    std::vector<uint64_t> chunked(n, ~0ull);
    for (size_t k = cuts.size() - 1; k > 0; --k) {
      const size_t a = cuts[k - 1], b = cuts[k];
      const std::vector<uint64_t> part(in.begin() + static_cast<long>(a),
                                       in.begin() + static_cast<long>(b));
      const std::vector<uint64_t> got =
          convert_codes(src.lib, part, to.lib, sr_options(42, 9, base + a));
      std::copy(got.begin(), got.end(), chunked.begin() + static_cast<long>(a));
    }
    EXPECT_EQ(chunked, whole);
    // Element by element with encode() and the documented bits random_u32(seed, stream, i).
    size_t diff = 0;
    for (size_t i = 0; i < n; ++i) {
      const double x = static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(in[i])));
      const uint64_t e =
          encode(to.lib, x, Rounding::kStochastic, random_u32(42, 9, base + i), NumericPolicy{});
      if (((e ^ whole[i]) & oracle::spec_int(to.lib.storage_bytes * 8, false).code_mask()) != 0) {
        ++diff;
      }
    }
    EXPECT_EQ(diff, 0u) << "convert element i must use random_u32(seed, stream, index_base + i)";
    // Another stream, seed or base gives other results (for some elements).
    EXPECT_NE(convert_codes(src.lib, in, to.lib, sr_options(42, 10, base)), whole);
    EXPECT_NE(convert_codes(src.lib, in, to.lib, sr_options(43, 9, base)), whole);
    EXPECT_NE(convert_codes(src.lib, in, to.lib, sr_options(42, 9, base + 1)), whole);
  }
}

}  // namespace
}  // namespace trnsim::num::testing
