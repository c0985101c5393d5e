// KernelBuilder::set_rounding: an fp32 -> bf16 tensor_copy with stochastic rounding gives one
// of the two bf16 neighbours of each value, rounding up about as often as the value's distance
// from the lower one says (so the mean is the fp32 value), the same bits for the same program
// seed and other bits for another; round to nearest even before set_rounding and after it is
// set back; refused on a generation without stochastic rounding.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::KernelBuilder;

constexpr int64_t kParts = 128, kCols = 2048;

// y_sr = x rounded stochastically, y_rne = x rounded to nearest even after the rounding was set
// back, y_default = the same before any set_rounding.
isa::Program copy_program(const arch::ChipSpec& spec, uint64_t seed) {
  KernelBuilder kb(spec);
  kb.set_seed(seed);
  auto x = kb.input("x", num::fp32(), {kParts, kCols});
  auto y_sr = kb.output("y_sr", num::bf16(), {kParts, kCols});
  auto y_rne = kb.output("y_rne", num::bf16(), {kParts, kCols});
  auto y_default = kb.output("y_default", num::bf16(), {kParts, kCols});
  auto xt = kb.sbuf("x", num::fp32(), {kParts, kCols});
  auto a = kb.sbuf("a", num::bf16(), {kParts, kCols});
  auto b = kb.sbuf("b", num::bf16(), {kParts, kCols});
  auto c = kb.sbuf("c", num::bf16(), {kParts, kCols});
  kb.dma_copy(xt, x);
  kb.tensor_copy(c, xt);
  kb.set_rounding(num::Rounding::kStochastic);
  kb.tensor_copy(a, xt);
  kb.set_rounding(num::Rounding::kNearestEven);
  kb.tensor_copy(b, xt);
  kb.dma_copy(y_sr, a);
  kb.dma_copy(y_rne, b);
  kb.dma_copy(y_default, c);
  return kb.build();
}

// Row p holds +-(1 + f_p * 2^-7) * 2^e with f_p = (2p + 1) / 256: a fraction f_p of a bf16 ulp
// above the lower neighbour (bf16 has 7 fraction bits), exact in fp32; signs and binades vary
// by row.
double fraction(int64_t p) { return static_cast<double>(2 * p + 1) / 256.0; }
std::vector<float> inputs() {
  std::vector<float> x(static_cast<size_t>(kParts * kCols));
  for (int64_t p = 0; p < kParts; ++p) {
    const double v = std::ldexp(1.0 + fraction(p) * 0x1p-7, static_cast<int>(p % 7) - 3);
    for (int64_t i = 0; i < kCols; ++i) x[p * kCols + i] = static_cast<float>(p % 2 ? -v : v);
  }
  return x;
}

// The bf16 neighbours of |x| toward zero and away from it.
float truncate_bf16(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xFFFF0000u);
}
float away_bf16(float x) {
  return std::bit_cast<float>((std::bit_cast<uint32_t>(x) & 0xFFFF0000u) + 0x10000u);
}

TEST(Rounding, StochasticCopyToBf16) {
  const std::vector<float> x = inputs();
  for (const std::string& gen : kGenerations) {
    SCOPED_TRACE(gen);
    const arch::ChipSpec& spec = chip(gen);
    const isa::Program p = copy_program(spec, 1234);
    auto out = run(spec, p, {{"x", x}});
    const auto& sr = out["y_sr"];
    ASSERT_EQ(sr.size(), x.size());
    // Each row rounds away from zero in a share of its elements close to f_p. The seed is fixed,
    // so this cannot flake: with 2048 draws the share's standard deviation is at most 0.011, and
    // the bound is 0.06 (over 5 deviations; it held for this seed when written).
    double total_err = 0;
    for (int64_t r = 0; r < kParts; ++r) {
      int64_t up = 0;
      for (int64_t i = 0; i < kCols; ++i) {
        const size_t k = static_cast<size_t>(r * kCols + i);
        const float lo = truncate_bf16(x[k]), hi = away_bf16(x[k]);
        ASSERT_TRUE(sr[k] == lo || sr[k] == hi)
            << "[" << r << ", " << i << "]: " << x[k] << " -> " << sr[k];
        up += sr[k] == hi;
      }
      const double share = static_cast<double>(up) / kCols;
      EXPECT_NEAR(share, fraction(r), 0.06) << "row " << r;
      total_err += share - fraction(r);
    }
    // Over all 256 Ki elements: the mean of the rounded values is the fp32 mean, to 0.005 ulp.
    EXPECT_NEAR(total_err / kParts, 0.0, 0.005);
    for (size_t k = 0; k < x.size(); ++k) {
      ASSERT_EQ(out["y_rne"][k], round_bf16(x[k])) << k;
      ASSERT_EQ(out["y_default"][k], round_bf16(x[k])) << k;
    }
    // The program's seed keys the bits: the same seed, the same values; another, others.
    const auto again = run(spec, copy_program(spec, 1234), {{"x", x}});
    EXPECT_EQ(again.at("y_sr"), sr);
    const auto other = run(spec, copy_program(spec, 99), {{"x", x}});
    EXPECT_NE(other.at("y_sr"), sr);
  }
}

TEST(Rounding, RecordedOnlyWhereTheOpHasIt) {
  KernelBuilder kb(chip("trn2"));
  auto t = kb.sbuf("t", num::fp32(), {128, 8});
  auto u = kb.sbuf("u", num::bf16(), {128, 8});
  kb.set_rounding(num::Rounding::kStochastic);
  EXPECT_EQ(kb.rounding(), num::Rounding::kStochastic);
  kb.iota(t, 0, 1);  // no rounding parameter
  kb.tensor_copy(u, t);
  const isa::Program& p = kb.program();
  EXPECT_EQ(p.stream(isa::Engine::kGpSimd).back().p.rounding, num::Rounding::kNearestEven);
  EXPECT_EQ(p.stream(isa::Engine::kVector).back().p.rounding, num::Rounding::kStochastic);
}

TEST(Rounding, StochasticRefusedWithoutTheFeature) {
  arch::ChipSpec spec = chip("trn2");
  spec.numerics.stochastic_rounding = false;
  KernelBuilder kb(spec);
  auto t = kb.sbuf("t", num::fp32(), {128, 8});
  auto u = kb.sbuf("u", num::bf16(), {128, 8});
  kb.memset(t, 1.0);
  kb.tensor_copy(u, t);  // round to nearest even: fine
  kb.set_rounding(num::Rounding::kStochastic);
  EXPECT_THROW(kb.tensor_copy(u, t), InputError);
}

}  // namespace
}  // namespace trnsim::kernel_test
