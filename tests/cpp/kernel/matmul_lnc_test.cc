// The K-split matmul over a logical core's two physical cores (examples/kernels/matmul_lnc.cc):
// values against a float64 reference, the same values as the single-core program, and time
// against the single-core run of the same work.
#include <gtest/gtest.h>

#include <cmath>

#include "arch/arch.h"
#include "base/error.h"
#include "chip/spmd_run.h"
#include "core/timing/timing_run.h"
#include "kernels/kernels.h"
#include "numerics/convert.h"

namespace trnsim::kernel_test {
namespace {

constexpr int64_t kM = 128, kK = 1024, kN = 512;

// bf16-exact inputs: small integers over 8.
std::vector<float> values(int64_t n, int salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>((i * 7 + salt) % 17 - 8) / 8.0f;
  return v;
}

TEST(MatmulLnc, TwoCoresComputeTheExactProduct) {
  for (const char* gen : {"trn2", "trn3"}) {
    SCOPED_TRACE(gen);
    const arch::ChipSpec chip = arch::load_chip(gen);
    const std::vector<float> lhsT = values(kK * kM, 3), rhs = values(kK * kN, 5);
    const isa::Program p0 = examples::matmul_lnc(chip, kM, kK, kN, 0, 2);
    const isa::Program p1 = examples::matmul_lnc(chip, kM, kK, kN, 1, 2);
    chip::SpmdRunner two(chip, {&p0, &p1});
    two.write_tensor_f32("lhsT", lhsT);
    two.write_tensor_f32("rhs", rhs);
    const chip::SpmdResult r = two.run();
    ASSERT_TRUE(r.ok()) << r.faults_text();
    const std::vector<float> out = two.read_tensor_f32("result");
    // Every product and partial sum of these inputs is exact in fp32: the result is exact.
    for (int64_t m = 0; m < kM; ++m)
      for (int64_t n = 0; n < kN; ++n) {
        double ref = 0;
        for (int64_t k = 0; k < kK; ++k)
          ref += static_cast<double>(lhsT[static_cast<size_t>(k * kM + m)]) *
                 rhs[static_cast<size_t>(k * kN + n)];
        ASSERT_EQ(out[static_cast<size_t>(m * kN + n)], static_cast<float>(ref)) << m << "," << n;
      }
    // One core doing all of K: the same values.
    const isa::Program one = examples::matmul_lnc(chip, kM, kK, kN);
    chip::SpmdRunner single(chip, {&one});
    single.write_tensor_f32("lhsT", lhsT);
    single.write_tensor_f32("rhs", rhs);
    const chip::SpmdResult s = single.run();
    ASSERT_TRUE(s.ok()) << s.faults_text();
    EXPECT_EQ(single.read_tensor_f32("result"), out);
    // A one-program group is the single-core model.
    EXPECT_EQ(s.total, core::run_timing(chip, one).total);
  }
}

// Time (timing only): with enough K per core, two cores beat one, by less than 2x (the
// exchange, the barrier and the shared HBM stack are not free). At small K the fixed costs
// of the exchange and the barrier (a few us) outweigh the halved matmul work.
TEST(MatmulLnc, TwoCoresBeatOneWhenKIsLarge) {
  constexpr int64_t kBigK = 16384;
  for (const char* gen : {"trn2", "trn3"}) {
    SCOPED_TRACE(gen);
    const arch::ChipSpec chip = arch::load_chip(gen);
    const isa::Program p0 = examples::matmul_lnc(chip, kM, kBigK, kN, 0, 2);
    const isa::Program p1 = examples::matmul_lnc(chip, kM, kBigK, kN, 1, 2);
    const isa::Program one = examples::matmul_lnc(chip, kM, kBigK, kN);
    const chip::SpmdResult two =
        chip::SpmdRunner(chip, {&p0, &p1}, core::RunMode::kTimingOnly).run();
    const chip::SpmdResult single =
        chip::SpmdRunner(chip, {&one}, core::RunMode::kTimingOnly).run();
    ASSERT_TRUE(two.ok() && single.ok()) << two.faults_text() << single.faults_text();
    EXPECT_LT(two.total.v, single.total.v);
    EXPECT_GT(2 * two.total.v, single.total.v);
  }
}

TEST(MatmulLnc, RejectsShapesItCannotSplit) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  EXPECT_THROW(examples::matmul_lnc(chip, 128, 128, 512, 0, 2), InputError);  // K < 2 tiles
  EXPECT_THROW(examples::matmul_lnc(chip, 128, 256, 511, 0, 2), InputError);
  EXPECT_THROW(examples::matmul_lnc(chip, 129, 256, 512, 0, 2), InputError);
  EXPECT_THROW(examples::matmul_lnc(chip, 128, 256, 512, 2, 2), InputError);
  // trn1 has no core_barrier: two programs do not build there.
  EXPECT_THROW(examples::matmul_lnc(arch::load_chip("trn1"), 128, 256, 512, 0, 2), InputError);
}

}  // namespace
}  // namespace trnsim::kernel_test
