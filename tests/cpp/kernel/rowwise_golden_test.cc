// Softmax, LayerNorm and RMSNorm on small shapes (with a partial last tile of rows) on trn1,
// trn2 and trn3, against fp64 references computed here. The kernels compute in fp32 with
// functions evaluated to the nearest fp32 (trnsim's activation model; the hardware's tables are
// not public), so the tolerances are a few fp32 ulps of accumulated error:
//   softmax  |err| <= 1e-6 (outputs in [0, 1]), relative 1e-5 above 1e-3;
//   norms    |err| <= 2e-5 for outputs of order 1 (mean/variance in fp32 over <= 700 elements).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/race/race_check.h"
#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace trnsim::kernel_test {
namespace {

class RowwiseGolden : public ::testing::TestWithParam<std::string> {};

std::vector<float> inputs(int64_t rows, int64_t cols, uint64_t seed, float scale) {
  std::vector<float> x = sixty_fourths(static_cast<size_t>(rows * cols), seed);
  for (float& v : x) v *= scale;
  return x;
}

TEST_P(RowwiseGolden, Softmax) {
  const int64_t rows = 200, cols = 300;
  const arch::ChipSpec& spec = chip(GetParam());
  const isa::Program p = examples::softmax(spec, rows, cols);
  EXPECT_TRUE(core::check_races(p, spec).clean());
  const auto x = inputs(rows, cols, 21, 8.0f);
  auto out = run(spec, p, {{"x", x}});
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, double{x[r * cols + c]});
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double{x[r * cols + c]} - mx);
    for (int64_t c = 0; c < cols; ++c)
      want[r * cols + c] = std::exp(double{x[r * cols + c]} - mx) / sum;
  }
  const ErrorStats e = compare(out["y"], want, 1e-3);
  RecordProperty("max_abs_error", fmt::format("{:.3g}", e.max_abs));
  RecordProperty("max_rel_error", fmt::format("{:.3g}", e.max_rel));
  EXPECT_LE(e.max_abs, 1e-6);
  EXPECT_LE(e.max_rel, 1e-5);
}

TEST_P(RowwiseGolden, LayerNorm) {
  const int64_t rows = 130, cols = 700;  // two bn_stats chunks, a 2-row last tile
  const arch::ChipSpec& spec = chip(GetParam());
  const double eps = 1e-5;
  const isa::Program p = examples::layernorm(spec, rows, cols, eps);
  EXPECT_TRUE(core::check_races(p, spec).clean());
  const auto x = inputs(rows, cols, 31, 3.0f);
  const auto gamma = inputs(1, cols, 32, 2.0f), beta = inputs(1, cols, 33, 1.0f);
  auto out = run(spec, p, {{"x", x}, {"gamma", gamma}, {"beta", beta}});
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) var += std::pow(x[r * cols + c] - mean, 2);
    var /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c)
      want[r * cols + c] = (x[r * cols + c] - mean) / std::sqrt(var + eps) * gamma[c] + beta[c];
  }
  const ErrorStats e = compare(out["y"], want);
  RecordProperty("max_abs_error", fmt::format("{:.3g}", e.max_abs));
  EXPECT_LE(e.max_abs, 2e-5);
}

TEST_P(RowwiseGolden, RmsNorm) {
  const int64_t rows = 256, cols = 96;
  const arch::ChipSpec& spec = chip(GetParam());
  const double eps = 1e-6;
  const isa::Program p = examples::rmsnorm(spec, rows, cols, eps);
  EXPECT_TRUE(core::check_races(p, spec).clean());
  const auto x = inputs(rows, cols, 41, 2.0f), gamma = inputs(1, cols, 42, 1.5f);
  auto out = run(spec, p, {{"x", x}, {"gamma", gamma}});
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += double{x[r * cols + c]} * x[r * cols + c];
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(cols) + eps);
    for (int64_t c = 0; c < cols; ++c) want[r * cols + c] = x[r * cols + c] * rstd * gamma[c];
  }
  const ErrorStats e = compare(out["y"], want);
  RecordProperty("max_abs_error", fmt::format("{:.3g}", e.max_abs));
  EXPECT_LE(e.max_abs, 2e-5);
}

INSTANTIATE_TEST_SUITE_P(Generations, RowwiseGolden, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
