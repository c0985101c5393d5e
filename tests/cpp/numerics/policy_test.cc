// The per-generation policy knobs of policy.h: NaN propagation (sign, quiet bit, payload
// truncated from the top) and canonical NaN, overflow of infinities, flushing of subnormal
// results; and a record of the library's choices where the documents leave a point open.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "test_util.h"

namespace trnsim::num::testing {
namespace {

// IEEE-style targets: (format, mantissa bits).
std::vector<FormatCase> ieee_targets() {
  return {case_for(Dtype::kFp32),   case_for(Dtype::kTf32),    case_for(Dtype::kBf16),
          case_for(Dtype::kFp16),   case_for(Dtype::kFp8E5M2), case_for(Dtype::kFp8E4M3),
          case_for(Dtype::kFp8E3M4)};
}

std::vector<uint64_t> fp32_nans() {
  std::vector<uint64_t> v = {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FC12345u,
                             0x7FA00000u, 0x7F812345u, 0x7FD55555u, 0x7FB00001u};
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[i] | 0x80000000u);
  return v;
}

// kPropagate: sign kept, quiet bit set, payload = the top mantissa bits of the source NaN.
TEST(NanPolicy, PropagateKeepsSignAndTruncatesPayloadFromTheTop) {
  const FormatCase src = case_for(Dtype::kFp32);
  const std::vector<uint64_t> in = fp32_nans();
  for (const FormatCase& to : ieee_targets()) {
    RoundOptions opts;
    opts.policy.nan = NanMode::kPropagate;
    const std::vector<uint64_t> out = convert_codes(src.lib, in, to.lib, opts);
    const int m = to.ref.man_bits, shift = to.ref.code_shift;
    Mismatches mm("fp32 NaN -> " + to.ref.name + " (propagate)");
    for (size_t i = 0; i < in.size(); ++i) {
      const uint64_t sign = (in[i] >> 31) & 1;
      const uint64_t payload = (in[i] & 0x7FFFFFu) >> (23 - m);
      const uint64_t quiet = 1ull << (m - 1);
      const uint64_t want =
          ((sign << (to.ref.bits - 1)) | (((1ull << to.ref.exp_bits) - 1) << m) | payload | quiet)
          << shift;
      mm.checked();
      if (out[i] != want) {
        mm.add(hex(in[i]) + ": got " + hex(out[i]) + ", expected " + hex(want));
      }
    }
    EXPECT_TRUE(mm.ok()) << mm.report();
  }
}

// Widening keeps the payload in the top mantissa bits (fp16 / bf16 NaNs to fp32).
TEST(NanPolicy, PropagateWidensThePayload) {
  const FormatCase f32 = case_for(Dtype::kFp32);
  for (Dtype d : {Dtype::kFp16, Dtype::kBf16, Dtype::kFp8E5M2}) {
    const FormatCase from = case_for(d);
    std::vector<uint64_t> in;
    for (uint64_t c = 0; c < (1ull << from.ref.bits); ++c) {
      if (oracle::code_is_nan(from.ref, c)) in.push_back(c);
    }
    const std::vector<uint64_t> out = convert_codes(from.lib, in, f32.lib, RoundOptions{});
    const int m = from.ref.man_bits;
    Mismatches mm(from.ref.name + " NaN -> fp32 (propagate)");
    for (size_t i = 0; i < in.size(); ++i) {
      const uint64_t sign = (in[i] >> (from.ref.bits - 1)) & 1;
      const uint64_t payload = (in[i] & ((1ull << m) - 1)) << (23 - m);
      const uint64_t want = (sign << 31) | 0x7F800000u | 0x400000u | payload;
      mm.checked();
      if (out[i] != want) mm.add(hex(in[i]) + ": got " + hex(out[i]) + ", expected " + hex(want));
    }
    EXPECT_TRUE(mm.ok()) << mm.report();
  }
}

// kCanonical: every NaN of one sign becomes the same NaN code, with the sign kept.
TEST(NanPolicy, CanonicalGivesOneNanPerSign) {
  const FormatCase src = case_for(Dtype::kFp32);
  const std::vector<uint64_t> in = fp32_nans();
  std::vector<FormatCase> targets = ieee_targets();
  targets.push_back(case_for(Dtype::kFp8E4M3Fn));
  for (const FormatCase& to : targets) {
    RoundOptions opts;
    opts.policy.nan = NanMode::kCanonical;
    const std::vector<uint64_t> out = convert_codes(src.lib, in, to.lib, opts);
    for (size_t i = 0; i < in.size(); ++i) {
      const oracle::Exact v = oracle::decode(to.ref, out[i]);
      EXPECT_TRUE(v.is_nan()) << to.ref.name << " " << hex(in[i]);
      EXPECT_EQ(v.neg, ((in[i] >> 31) & 1) != 0) << to.ref.name << " " << hex(in[i]);
      const size_t first_same_sign = (in[i] >> 31) ? in.size() / 2 : 0;
      EXPECT_EQ(out[i], out[first_same_sign]) << to.ref.name << " " << hex(in[i]);
    }
  }
}

// The NaN-carrying formats without a signed NaN: fnuz has one NaN (0x80), E8M0 has 0xFF.
TEST(NanPolicy, UnsignedNanFormats) {
  for (NanMode mode : {NanMode::kPropagate, NanMode::kCanonical}) {
    NumericPolicy p;
    p.nan = mode;
    for (double nan :
         {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()}) {
      EXPECT_EQ(encode(cfp8(), nan, Rounding::kNearestEven, 0, p), 0x80u);
      EXPECT_EQ(encode(cfp8(5, 30), nan, Rounding::kStochastic, 0x1234u, p), 0x80u);
      EXPECT_EQ(encode(e8m0(), nan, Rounding::kTowardZero, 0, p), 0xFFu);
      for (const FormatCase& c : int_cases()) {
        EXPECT_EQ(encode(c.lib, nan, Rounding::kNearestEven, 0, p), 0u) << c.ref.name;
      }
    }
  }
}

// Flushing: a result below min normal becomes +-0 (fnuz: +0); normal results are unchanged.
TEST(FlushPolicy, SubnormalResultsBecomeZero) {
  NumericPolicy p;
  p.flush_subnormals = true;
  Mismatches mm("flush_subnormals");
  std::vector<FormatCase> targets = {case_for(Dtype::kBf16), case_for(Dtype::kFp16),
                                     case_for(Dtype::kTf32)};
  for (const FormatCase& c : fp8_cases()) targets.push_back(c);
  for (const FormatCase& t : targets) {
    const double minn = oracle::to_double(oracle::min_normal(t.ref));
    const double sub = oracle::to_double(oracle::min_subnormal(t.ref));
    // Clearly subnormal results (below min normal even after rounding up), and normal ones.
    for (double x : {sub, 3 * sub, minn / 2, minn * 0.75, minn, minn * 1.5, 1.0}) {
      for (double s : {x, -x}) {
        for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero}) {
          check_encode(t, s, r, 0, p, mm);
        }
      }
    }
  }
  EXPECT_TRUE(mm.ok()) << mm.report();
}

// Infinite inputs: kInfinity gives inf where the format has it, else NaN where it has NaN,
// else max. Under kSaturate policy.h's comment speaks of finite values only, while the compiler
// flag it cites clamps inf to max: the oracle accepts either; the choice is printed here.
TEST(OverflowPolicy, InfiniteInputs) {
  const double inf = std::numeric_limits<double>::infinity();
  Mismatches mm("infinite inputs");
  std::vector<FormatCase> targets = narrow_cases();
  for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kTf32, Dtype::kFp32}) {
    targets.push_back(case_for(d));
  }
  for (const FormatCase& t : targets) {
    for (Overflow o : {Overflow::kInfinity, Overflow::kSaturate}) {
      NumericPolicy p;
      p.overflow = o;
      for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero, Rounding::kStochastic}) {
        check_encode(t, inf, r, 0x9999u, p, mm);
        check_encode(t, -inf, r, 0x9999u, p, mm);
      }
    }
    NumericPolicy sat;
    sat.overflow = Overflow::kSaturate;
    std::printf("  %-14s +inf under kSaturate -> %s\n", t.ref.name.c_str(),
                hex(encode(t.lib, inf, Rounding::kNearestEven, 0, sat)).c_str());
  }
  EXPECT_TRUE(mm.ok()) << mm.report();
}

// Points the documents leave open (the oracle accepts anything): printed for the record.
TEST(OpenPoints, RecordTheLibraryChoices) {
  const NumericPolicy p;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double x : {0.0, -0.0, -1.0, 0x1p-128, 0x1p-200}) {
    std::printf("  e8m0(%a) RNE -> %s\n", x,
                hex(encode(e8m0(), x, Rounding::kNearestEven, 0, p)).c_str());
  }
  std::printf("  fp4_e2m1(NaN) -> %s, fp4_e2m1(-NaN) -> %s\n",
              hex(encode(fp4_e2m1(), nan, Rounding::kNearestEven, 0, p)).c_str(),
              hex(encode(fp4_e2m1(), -nan, Rounding::kNearestEven, 0, p)).c_str());
  std::printf("  decode(cfp8, 0x80) sign bit: %d\n", std::signbit(decode(cfp8(), 0x80)) ? 1 : 0);
}

}  // namespace
}  // namespace trnsim::num::testing
