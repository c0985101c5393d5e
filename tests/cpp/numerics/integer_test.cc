// Integer formats: every int8/uint8/int16/uint16 value through FP32 (and BF16/FP16) and back,
// int32/uint32 to floats with rounding, floats to integers with rounding, saturation and
// NaN -> 0, and integer to integer, against the oracle and against hand-written values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

namespace trnsim::num::testing {
namespace {

std::vector<uint64_t> every_code(int bits) {
  std::vector<uint64_t> v(size_t{1} << bits);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

std::vector<FormatCase> small_ints() {
  return {case_for(Dtype::kInt8), case_for(Dtype::kUint8), case_for(Dtype::kInt16),
          case_for(Dtype::kUint16)};
}

TEST(Integer, EverySmallIntegerThroughFp32AndBack) {
  const FormatCase f32 = case_for(Dtype::kFp32);
  for (const FormatCase& c : small_ints()) {
    const std::vector<uint64_t> codes = every_code(c.ref.bits);
    for (const RoundOptions& opts : all_round_options()) {
      const std::vector<uint64_t> fl = convert_codes(c.lib, codes, f32.lib, opts);
      const std::vector<uint64_t> back = convert_codes(f32.lib, fl, c.lib, opts);
      size_t bad = 0;
      for (size_t i = 0; i < codes.size(); ++i) {
        const double want = oracle::to_double(oracle::decode(c.ref, codes[i]));
        const float got = std::bit_cast<float>(static_cast<uint32_t>(fl[i]));
        if (static_cast<double>(got) != want || ((back[i] ^ codes[i]) & c.ref.code_mask()) != 0) {
          if (++bad < 5)
            ADD_FAILURE() << c.ref.name << " " << want << " -> " << got << " -> " << hex(back[i])
                          << " " << describe(opts);
        }
      }
      EXPECT_EQ(bad, 0u) << c.ref.name;
    }
  }
}

TEST(Integer, EverySmallIntegerToEveryFloatFormat) {
  std::vector<FormatCase> floats = narrow_cases();
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kTf32, Dtype::kFp64}) {
    floats.push_back(case_for(d));
  }
  for (const FormatCase& c : small_ints()) {
    const std::vector<uint64_t> codes = thin(every_code(c.ref.bits), sample_stride(4));
    Mismatches mm(c.ref.name + " -> floats");
    for (const FormatCase& to : floats) {
      for (const RoundOptions& opts : all_round_options()) check_conversion(c, codes, to, opts, mm);
    }
    EXPECT_TRUE(mm.ok()) << mm.report();
  }
}

std::vector<uint64_t> int32_inputs(bool is_signed) {
  std::vector<uint64_t> v;
  auto add = [&](int64_t x) { v.push_back(static_cast<uint64_t>(x) & 0xFFFFFFFFu); };
  for (int e = 0; e <= 32; ++e) {
    const int64_t p = int64_t{1} << e;
    for (int64_t k = -5; k <= 5; ++k) {
      add(p + k);
      add(-(p + k));
      add(p + p / 2 + k);  // halfway points of coarse formats
    }
  }
  Rng rng(is_signed ? 32 : 33);
  const size_t n = count_for_level(100'000, 2'000'000);
  for (size_t i = 0; i < n; ++i) add(static_cast<int64_t>(rng.u32()) >> rng.below(31));
  return v;
}

TEST(Integer, Int32AndUint32ToFloats) {
  std::vector<FormatCase> floats = {case_for(Dtype::kFp32), case_for(Dtype::kTf32),
                                    case_for(Dtype::kBf16), case_for(Dtype::kFp16),
                                    case_for(Dtype::kFp64)};
  for (const FormatCase& c : narrow_cases()) floats.push_back(c);
  for (Dtype d : {Dtype::kInt32, Dtype::kUint32}) {
    const FormatCase from = case_for(d);
    const std::vector<uint64_t> in = int32_inputs(d == Dtype::kInt32);
    for (const FormatCase& to : floats) {
      for (const RoundOptions& opts : all_round_options()) {
        Mismatches mm(from.ref.name + " -> " + to.ref.name + " " + describe(opts));
        check_conversion(from, in, to, opts, mm);
        EXPECT_TRUE(mm.ok()) << mm.report();
      }
    }
  }
}

TEST(Integer, IntegerToInteger) {
  for (const FormatCase& from : int_cases()) {
    std::vector<uint64_t> in = from.ref.bits <= 16
                                   ? thin(every_code(from.ref.bits), sample_stride(4))
                                   : int32_inputs(from.ref.is_signed);
    for (const FormatCase& to : int_cases()) {
      Mismatches mm(from.ref.name + " -> " + to.ref.name);
      for (const RoundOptions& opts : all_round_options()) check_conversion(from, in, to, opts, mm);
      EXPECT_TRUE(mm.ok()) << mm.report();
    }
  }
}

// Hand-written cases, independent of the oracle: value, RNE / RZ result per type.
struct IntCase {
  double x;
  Dtype d;
  int64_t rne, rz;
};

TEST(Integer, HandWrittenRoundingAndSaturation) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<IntCase> cases = {
      {2.5, Dtype::kInt8, 2, 2},
      {3.5, Dtype::kInt8, 4, 3},
      {-2.5, Dtype::kInt8, -2, -2},
      {-3.5, Dtype::kInt8, -4, -3},
      {-1.9, Dtype::kInt8, -2, -1},
      {-0.5, Dtype::kInt8, 0, 0},
      {-0.7, Dtype::kUint8, 0, 0},
      {126.5, Dtype::kInt8, 126, 126},
      {127.5, Dtype::kInt8, 127, 127},
      {-128.5, Dtype::kInt8, -128, -128},
      {-1000.0, Dtype::kInt8, -128, -128},
      {255.5, Dtype::kUint8, 255, 255},
      {254.5, Dtype::kUint8, 254, 254},
      {-1.0, Dtype::kUint8, 0, 0},
      {65535.9, Dtype::kUint16, 65535, 65535},
      {-32768.4, Dtype::kInt16, -32768, -32768},
      {32767.5, Dtype::kInt16, 32767, 32767},
      {2147483648.0, Dtype::kInt32, 2147483647, 2147483647},
      {-2147483648.0, Dtype::kInt32, -2147483648LL, -2147483648LL},
      {-2147483649.0, Dtype::kInt32, -2147483648LL, -2147483648LL},
      {2147483646.5, Dtype::kInt32, 2147483646, 2147483646},
      {4294967295.5, Dtype::kUint32, 4294967295LL, 4294967295LL},
      {1e30, Dtype::kUint32, 4294967295LL, 4294967295LL},
      {inf, Dtype::kInt16, 32767, 32767},
      {-inf, Dtype::kInt16, -32768, -32768},
      {-inf, Dtype::kUint16, 0, 0},
      {nan, Dtype::kInt32, 0, 0},
      {-nan, Dtype::kInt8, 0, 0},
      {nan, Dtype::kUint32, 0, 0},
  };
  for (const IntCase& c : cases) {
    const Format f = int_format(c.d);
    const uint64_t mask = f.bits >= 64 ? ~0ull : (1ull << f.bits) - 1;
    for (Overflow o : {Overflow::kInfinity, Overflow::kSaturate}) {
      NumericPolicy p;
      p.overflow = o;
      EXPECT_EQ(encode(f, c.x, Rounding::kNearestEven, 0, p) & mask,
                static_cast<uint64_t>(c.rne) & mask)
          << f.name() << " RNE " << c.x;
      EXPECT_EQ(encode(f, c.x, Rounding::kTowardZero, 0, p) & mask,
                static_cast<uint64_t>(c.rz) & mask)
          << f.name() << " RZ " << c.x;
      // SR on an exact integer or a saturated value does not depend on the bits.
      if (c.x == std::floor(c.x) || std::isnan(c.x)) {
        EXPECT_EQ(encode(f, c.x, Rounding::kStochastic, 0xFFFFFFFFu, p) & mask,
                  static_cast<uint64_t>(c.rne) & mask)
            << f.name() << " SR " << c.x;
      }
    }
  }
}

TEST(Integer, DecodeGivesTheTwoComplementValue) {
  EXPECT_EQ(decode(int_format(Dtype::kInt8), 0x80), -128.0);
  EXPECT_EQ(decode(int_format(Dtype::kInt8), 0xFF), -1.0);
  EXPECT_EQ(decode(int_format(Dtype::kUint8), 0xFF), 255.0);
  EXPECT_EQ(decode(int_format(Dtype::kInt16), 0x8000), -32768.0);
  EXPECT_EQ(decode(int_format(Dtype::kInt32), 0x80000000u), -2147483648.0);
  EXPECT_EQ(decode(int_format(Dtype::kUint32), 0xFFFFFFFFu), 4294967295.0);
}

}  // namespace
}  // namespace trnsim::num::testing
