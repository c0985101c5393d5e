// Every code of every format of up to 16 bits (and of TF32) decoded by the library equals the
// oracle's value from the bit fields, and re-encoding it (RNE) gives the same code back.
// Also: the format descriptors and their extremes against the format definitions.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "numerics/convert.h"
#include "numerics/format.h"
#include "oracle.h"
#include "test_util.h"

namespace trnsim::num::testing {
namespace {

// The library's double equals the oracle's exact value (sign of zero included; NaN: NaN-ness
// and sign).
bool same_value(const oracle::Exact& want, double got) {
  const oracle::Exact g = oracle::from_double(got);
  if (want.is_nan()) return g.is_nan() && g.neg == want.neg;
  return g == want;
}

std::vector<FormatCase> sweep_cases() {
  std::vector<FormatCase> v = narrow_cases();
  for (Dtype d :
       {Dtype::kBf16, Dtype::kFp16, Dtype::kInt8, Dtype::kUint8, Dtype::kInt16, Dtype::kUint16}) {
    v.push_back(case_for(d));
  }
  for (const FormatCase& c : cfp8_all_cases()) v.push_back(c);
  return v;
}

// Decodes and re-encodes `codes` of `c` (code `codes[i]` as stored, i.e. shifted).
void sweep(const FormatCase& c, const std::vector<uint64_t>& codes, Mismatches& dec,
           Mismatches& enc) {
  const NumericPolicy policy{};
  for (uint64_t code : codes) {
    const oracle::Exact want = oracle::decode(c.ref, code);
    const double got = decode(c.lib, code);
    dec.checked();
    if (!same_value(want, got)) {
      dec.add(c.ref.name + " " + hex(code) + ": expected " + want.str() + ", got " +
              oracle::from_double(got).str());
    }
    // Re-encode the oracle's value: the same code (a NaN code for NaN; E2M1 has none).
    if (c.ref.sp == oracle::Sp::kFinite && want.is_nan()) continue;
    const uint64_t back = encode(c.lib, oracle::to_double(want), Rounding::kNearestEven, 0, policy);
    enc.checked();
    const bool ok = want.is_nan()
                        ? oracle::code_is_nan(c.ref, back) &&
                              (c.ref.sp == oracle::Sp::kFnuz || c.ref.sp == oracle::Sp::kE8M0 ||
                               oracle::decode(c.ref, back).neg == want.neg)
                    : c.ref.is_int() ? ((back ^ code) & c.ref.code_mask()) == 0
                                     : back == code;
    if (!ok) {
      enc.add(c.ref.name + " " + hex(code) + " = " + want.str() + ": re-encoded to " + hex(back));
    }
  }
}

TEST(DecodeSweep, EveryCodeOfEveryFormatUpTo16Bits) {
  for (const FormatCase& c : sweep_cases()) {
    std::vector<uint64_t> codes(size_t{1} << c.ref.bits);
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = i;
    Mismatches dec("decode " + c.ref.name), enc("re-encode " + c.ref.name);
    sweep(c, codes, dec, enc);
    EXPECT_TRUE(dec.ok()) << dec.report();
    EXPECT_TRUE(enc.ok()) << enc.report();
  }
}

TEST(DecodeSweep, EveryTf32Code) {
  const FormatCase c = case_for(Dtype::kTf32);
  std::vector<uint64_t> codes(size_t{1} << 19);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = uint64_t{i} << 13;
  Mismatches dec("decode tf32"), enc("re-encode tf32");
  sweep(c, codes, dec, enc);
  EXPECT_TRUE(dec.ok()) << dec.report();
  EXPECT_TRUE(enc.ok()) << enc.report();
}

TEST(DecodeSweep, Fp32RandomAndSpecialPatterns) {
  const FormatCase c = case_for(Dtype::kFp32);
  std::vector<uint64_t> codes = {0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000,
                                 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
                                 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x3F800000};
  Rng rng(1);
  const size_t n = count_for_level(1'000'000, 20'000'000);
  for (size_t i = 0; i < n; ++i) codes.push_back(rng.u32());
  Mismatches dec("decode fp32"), enc("re-encode fp32");
  sweep(c, codes, dec, enc);
  EXPECT_TRUE(dec.ok()) << dec.report();
  EXPECT_TRUE(enc.ok()) << enc.report();
}

TEST(DecodeSweep, Fp64IsTheIdentity) {
  const FormatCase c = case_for(Dtype::kFp64);
  Rng rng(2);
  Mismatches dec("decode fp64"), enc("re-encode fp64");
  std::vector<uint64_t> codes = {0, 1ull << 63, 0x7FF0000000000000ull, 0x0000000000000001ull};
  for (int i = 0; i < 100000; ++i) codes.push_back(rng.next());
  sweep(c, codes, dec, enc);
  EXPECT_TRUE(dec.ok()) << dec.report();
  EXPECT_TRUE(enc.ok()) << enc.report();
}

// decode() uses only the low `bits` bits after removing code_shift.
TEST(DecodeSweep, BitsOutsideTheCodeAreIgnored) {
  Mismatches mm("bits outside the code");
  for (const FormatCase& c : sweep_cases()) {
    if (c.ref.bits > 8) continue;
    for (uint64_t code = 0; code < (1ull << c.ref.bits); ++code) {
      const uint64_t junk = code | (0xABCDull << c.ref.bits);
      mm.checked();
      if (!same_value(oracle::decode(c.ref, code), decode(c.lib, junk))) {
        mm.add(c.ref.name + " " + hex(junk));
      }
    }
  }
  const FormatCase t = case_for(Dtype::kTf32);
  for (uint64_t c : {0x3F800000ull, 0xC0490000ull, 0x00002000ull}) {
    mm.checked();
    if (!same_value(oracle::decode(t.ref, c), decode(t.lib, c | 0x1FFF))) {
      mm.add("tf32 " + hex(c | 0x1FFF));
    }
  }
  EXPECT_TRUE(mm.ok()) << mm.report();
}

Specials expected_specials(oracle::Sp sp) {
  switch (sp) {
    case oracle::Sp::kIeee:
      return Specials::kIeee;
    case oracle::Sp::kFn:
      return Specials::kFn;
    case oracle::Sp::kFnuz:
      return Specials::kFnuz;
    case oracle::Sp::kFinite:
      return Specials::kFinite;
    default:
      return Specials::kE8M0;
  }
}

int expected_storage(const oracle::Spec& s) {
  if (s.bits <= 8) return 1;
  if (s.bits <= 16) return 2;
  if (s.bits <= 32 || s.code_shift != 0) return 4;
  return 8;
}

std::vector<FormatCase> every_case() {
  std::vector<FormatCase> v;
  for (Dtype d : {Dtype::kFp64, Dtype::kFp32, Dtype::kTf32, Dtype::kBf16, Dtype::kFp16,
                  Dtype::kFp8E4M3, Dtype::kFp8E4M3Fn, Dtype::kFp8E5M2, Dtype::kFp8E3M4,
                  Dtype::kCfp8, Dtype::kFp4E2M1, Dtype::kE8M0, Dtype::kInt8, Dtype::kInt16,
                  Dtype::kInt32, Dtype::kUint8, Dtype::kUint16, Dtype::kUint32}) {
    v.push_back(case_for(d));
  }
  for (const FormatCase& c : cfp8_all_cases()) v.push_back(c);
  return v;
}

TEST(FormatDescriptors, MatchTheFormatDefinitions) {
  for (const FormatCase& c : every_case()) {
    const Format& f = c.lib;
    SCOPED_TRACE(c.ref.name);
    EXPECT_EQ(f.storage_bytes, expected_storage(c.ref));
    EXPECT_EQ(f.is_signed, c.ref.is_signed);
    if (c.ref.is_int()) {
      EXPECT_EQ(f.kind, Kind::kInt);
      EXPECT_EQ(f.bits, c.ref.bits);
      EXPECT_FALSE(f.has_inf());
      EXPECT_FALSE(f.has_nan());
      continue;
    }
    EXPECT_EQ(f.kind, Kind::kFloat);
    EXPECT_EQ(f.bits, c.ref.bits);
    EXPECT_EQ(f.exp_bits, c.ref.exp_bits);
    EXPECT_EQ(f.man_bits, c.ref.man_bits);
    EXPECT_EQ(f.bias, c.ref.bias);
    EXPECT_EQ(f.code_shift, c.ref.code_shift);
    EXPECT_EQ(f.specials, expected_specials(c.ref.sp));
    EXPECT_EQ(f.has_inf(), c.ref.has_inf());
    EXPECT_EQ(f.has_nan(), c.ref.has_nan());
    EXPECT_EQ(f.max_finite(), oracle::to_double(oracle::max_finite(c.ref)));
    EXPECT_EQ(f.min_normal(), oracle::to_double(oracle::min_normal(c.ref)));
    EXPECT_EQ(f.min_subnormal(), oracle::to_double(oracle::min_subnormal(c.ref)));
  }
}

// The extremes the task names, written out by hand.
TEST(FormatDescriptors, PublishedMaxima) {
  EXPECT_EQ(fp8_e4m3().max_finite(), 240.0);
  EXPECT_EQ(fp8_e4m3fn().max_finite(), 448.0);
  EXPECT_EQ(fp8_e5m2().max_finite(), 57344.0);
  EXPECT_EQ(fp8_e3m4().max_finite(), 15.5);
  EXPECT_EQ(fp4_e2m1().max_finite(), 6.0);
  EXPECT_EQ(fp16().max_finite(), 65504.0);
  EXPECT_EQ(e8m0().max_finite(), std::ldexp(1.0, 127));
  EXPECT_EQ(bf16().max_finite(), std::ldexp(255.0, 120));
  EXPECT_EQ(fp32().max_finite(), static_cast<double>(3.40282346638528859811704183484516925e38f));
  EXPECT_EQ(cfp8().exp_bits, 4);
  EXPECT_EQ(cfp8().bias, 8);
  EXPECT_EQ(cfp8().max_finite(), 240.0);
  EXPECT_EQ(fp8_e4m3().min_subnormal(), std::ldexp(1.0, -9));
  EXPECT_EQ(fp8_e5m2().min_subnormal(), std::ldexp(1.0, -16));
  EXPECT_EQ(fp16().min_subnormal(), std::ldexp(1.0, -24));
}

}  // namespace
}  // namespace trnsim::num::testing
