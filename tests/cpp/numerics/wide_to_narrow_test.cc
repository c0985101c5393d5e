// Every BF16 and every FP16 code converted to every FP8 format (e4m3, e4m3fn, e5m2, e3m4, cFP8
// default), E2M1 and E8M0, and between BF16 and FP16, with RNE, RZ and SR and both overflow
// policies, against the oracle; then back to BF16 / FP16 / FP32.
#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"

namespace trnsim::num::testing {
namespace {

std::vector<uint64_t> every_code(int bits) {
  std::vector<uint64_t> v(size_t{1} << bits);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

class WideToNarrow : public ::testing::TestWithParam<Dtype> {};

TEST_P(WideToNarrow, EveryCodeToEveryNarrowFormat) {
  const FormatCase from = case_for(GetParam());
  const std::vector<uint64_t> codes = every_code(16);
  std::vector<FormatCase> targets = narrow_cases();
  targets.push_back(case_for(GetParam() == Dtype::kBf16 ? Dtype::kFp16 : Dtype::kBf16));
  for (const FormatCase& to : targets) {
    for (const RoundOptions& opts : all_round_options()) {
      Mismatches mm(from.ref.name + " -> " + to.ref.name + " " + describe(opts));
      check_conversion(from, codes, to, opts, mm);
      EXPECT_TRUE(mm.ok()) << mm.report();
    }
  }
}

// The narrow results converted back to BF16 / FP16 / FP32 equal the oracle's conversion of the
// oracle's narrow value (RNE and RZ; back is exact or rounds once).
TEST_P(WideToNarrow, RoundTripBack) {
  const FormatCase from = case_for(GetParam());
  const std::vector<uint64_t> codes = thin(every_code(16), sample_stride(4));
  for (const FormatCase& to : narrow_cases()) {
    for (Rounding r : {Rounding::kNearestEven, Rounding::kTowardZero}) {
      RoundOptions opts;
      opts.rounding = r;
      const std::vector<uint64_t> narrow = convert_codes(from.lib, codes, to.lib, opts);
      for (Dtype back : {Dtype::kBf16, Dtype::kFp16, Dtype::kFp32}) {
        const FormatCase wide = case_for(back);
        const std::vector<uint64_t> out = convert_codes(to.lib, narrow, wide.lib, opts);
        Mismatches mm(from.ref.name + " -> " + to.ref.name + " -> " + wide.ref.name + " " +
                      describe(opts));
        for (size_t i = 0; i < codes.size(); ++i) {
          const oracle::Expect n =
              expect_element(to.ref, oracle::decode(from.ref, codes[i]), opts, i);
          if (n.unspecified || n.has_b || n.a.nan) continue;  // checked by the test above
          const oracle::Expect w =
              expect_element(wide.ref, oracle::decode(to.ref, n.a.code), opts, i);
          mm.checked();
          if (!oracle::satisfies(wide.ref, w, out[i])) {
            mm.add(hex(codes[i]) + " -> " + hex(narrow[i]) + " -> " + hex(out[i]) + ", expected " +
                   w.str());
          }
        }
        EXPECT_TRUE(mm.ok()) << mm.report();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sources, WideToNarrow, ::testing::Values(Dtype::kBf16, Dtype::kFp16),
                         [](const auto& info) {
                           return info.param == Dtype::kBf16 ? std::string("bf16")
                                                             : std::string("fp16");
                         });

}  // namespace
}  // namespace trnsim::num::testing
