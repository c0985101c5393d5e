// Every code of every narrow format (FP8 kinds, every cFP8 layout and bias, E2M1, E8M0)
// converted by convert() to BF16, FP16, TF32, FP32 and FP64 with every rounding mode and
// overflow policy, against the oracle. Widening is mostly exact; where the target is narrower
// in range (E8M0 or cFP8 with a small bias to FP16) the oracle rounds once.
#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"

namespace trnsim::num::testing {
namespace {

std::vector<FormatCase> wide_targets() {
  return {case_for(Dtype::kBf16), case_for(Dtype::kFp16), case_for(Dtype::kTf32),
          case_for(Dtype::kFp32), case_for(Dtype::kFp64)};
}

std::vector<uint64_t> every_code(int bits) {
  std::vector<uint64_t> v(size_t{1} << bits);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

TEST(NarrowToWide, EveryNarrowCodeToEveryWideFormat) {
  for (const FormatCase& from : narrow_cases()) {
    const std::vector<uint64_t> codes = every_code(from.ref.bits);
    for (const FormatCase& to : wide_targets()) {
      for (const RoundOptions& opts : all_round_options()) {
        Mismatches mm(from.ref.name + " -> " + to.ref.name + " " + describe(opts));
        check_conversion(from, codes, to, opts, mm);
        EXPECT_TRUE(mm.ok()) << mm.report();
      }
    }
  }
}

TEST(NarrowToWide, EveryCfp8LayoutAndBias) {
  Mismatches mm("cfp8 (every layout and bias) -> bf16/fp16/fp32");
  for (const FormatCase& from : cfp8_all_cases()) {
    const std::vector<uint64_t> codes = every_code(8);
    for (Dtype d : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32}) {
      for (const RoundOptions& opts : all_round_options()) {
        check_conversion(from, codes, case_for(d), opts, mm);
      }
    }
  }
  EXPECT_TRUE(mm.ok()) << mm.report();
}

// Narrow to narrow: every code of each narrow format to each other one (exercises the funnel
// with inputs that are not from a wide format).
TEST(NarrowToWide, EveryNarrowCodeToEveryNarrowFormat) {
  for (const FormatCase& from : narrow_cases()) {
    const std::vector<uint64_t> codes = every_code(from.ref.bits);
    Mismatches mm(from.ref.name + " -> narrow formats");
    for (const FormatCase& to : narrow_cases()) {
      for (const RoundOptions& opts : all_round_options())
        check_conversion(from, codes, to, opts, mm);
    }
    EXPECT_TRUE(mm.ok()) << mm.report();
  }
}

}  // namespace
}  // namespace trnsim::num::testing
