// The fused self-attention kernel on small shapes on trn1, trn2 and trn3, against an fp64
// reference of softmax(q k^T / sqrt(d)) v computed here from the same (bf16-exact) inputs.
// Tolerance: the kernel rounds the probabilities to bf16 before the PV matmul (relative error
// <= 2^-9 each) while the row sums stay fp32; with |v| <= 1 the output error is below
// 2 x 2^-9 ~ 0.004, and the test allows 0.005.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/race/race_check.h"
#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace trnsim::kernel_test {
namespace {

struct Shape {
  int64_t seq, d;
  bool causal;
};

class AttentionGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(AttentionGolden, MatchesReference) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const Shape s : {Shape{256, 64, false}, Shape{256, 64, true}, Shape{512, 128, true}}) {
    SCOPED_TRACE(::testing::Message() << "seq " << s.seq << " d " << s.d << " causal " << s.causal);
    const isa::Program p = examples::attention(spec, s.seq, s.d, s.causal);
    const core::RaceReport races = core::check_races(p, spec, {20000});
    EXPECT_TRUE(races.clean()) << core::format_race_report(races);
    const size_t n = static_cast<size_t>(s.seq * s.d);
    const auto qT = sixty_fourths(n, 51), kT = sixty_fourths(n, 52), v = sixty_fourths(n, 53);
    auto out = run(spec, p, {{"qT", qT}, {"kT", kT}, {"v", v}});
    std::vector<double> want(n);
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
    std::vector<double> w(static_cast<size_t>(s.seq));
    for (int64_t q = 0; q < s.seq; ++q) {
      double mx = -1e300, sum = 0;
      const int64_t keys = s.causal ? q + 1 : s.seq;
      for (int64_t k = 0; k < keys; ++k) {
        double dot = 0;
        for (int64_t i = 0; i < s.d; ++i) dot += double{qT[i * s.seq + q]} * kT[i * s.seq + k];
        w[k] = dot * scale;
        mx = std::max(mx, w[k]);
      }
      for (int64_t k = 0; k < keys; ++k) sum += (w[k] = std::exp(w[k] - mx));
      for (int64_t i = 0; i < s.d; ++i) {
        double o = 0;
        for (int64_t k = 0; k < keys; ++k) o += w[k] * v[k * s.d + i];
        want[q * s.d + i] = o / sum;
      }
    }
    const ErrorStats e = compare(out["out"], want);
    RecordProperty("max_abs_error_seq" + std::to_string(s.seq) + (s.causal ? "_causal" : ""),
                   fmt::format("{:.3g}", e.max_abs));
    EXPECT_LE(e.max_abs, 5e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Generations, AttentionGolden, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
