// The four NKI tutorial matmul kernels on small shapes on trn1, trn2 and trn3, through the
// functional runner, against an exact reference computed here: the inputs are small integers,
// so every fp32 PSUM sum is exact and the only rounding is the cast to bf16 (RNE), which the
// reference applies with its own bit arithmetic. The comparison is bit-exact.
#include <gtest/gtest.h>

#include <functional>

#include "core/race/race_check.h"
#include "isa/program.h"
#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace trnsim::kernel_test {
namespace {

struct Case {
  std::string name;
  int64_t m, k, n;
  std::function<isa::Program(const arch::ChipSpec&)> build;
  int64_t k_block = 0;  // > 0: results accumulate in bf16 across K blocks of this size
};

std::vector<Case> cases() {
  using namespace examples;
  return {
      {"tiled", 256, 256, 1024,
       [](const arch::ChipSpec& c) { return matmul_tiled(c, 256, 256, 1024); }},
      {"hoisted", 128, 384, 1024,
       [](const arch::ChipSpec& c) { return matmul_hoisted(c, 128, 384, 1024); }},
      {"blocked", 512, 128, 2048,
       [](const arch::ChipSpec& c) { return matmul_blocked(c, 512, 128, 2048); }},
      // Blocks of 1 x 1 x 2 tiles: two blocks in every dim, results accumulated in bf16.
      {"fully_optimized", 256, 512, 1024,
       [](const arch::ChipSpec& c) {
         return matmul_fully_optimized(c, 256, 512, 1024, {1, 1, 2});
       },
       256},
  };
}

// result[m][n] = bf16(sum_k lhsT[k][m] * rhs[k][n]), or with K blocks, the running bf16 sum.
// Integer sums (exact), accumulated row by row so that the loops stay cheap in Debug builds.
std::vector<float> reference(const Case& c, const std::vector<float>& lhsT,
                             const std::vector<float>& rhs) {
  const auto n_ = static_cast<size_t>(c.n);
  std::vector<float> out(static_cast<size_t>(c.m) * n_, 0.0f);
  const int64_t kb = c.k_block > 0 ? c.k_block : c.k;
  std::vector<int64_t> s(n_);
  for (int64_t m = 0; m < c.m; ++m) {
    float* acc = &out[static_cast<size_t>(m) * n_];  // bf16 values, kept in floats
    for (int64_t k0 = 0; k0 < c.k; k0 += kb) {
      std::fill(s.begin(), s.end(), 0);
      for (int64_t k = k0; k < k0 + kb; ++k) {
        const auto a = static_cast<int64_t>(lhsT[static_cast<size_t>(k * c.m + m)]);
        const float* r = &rhs[static_cast<size_t>(k) * n_];
        for (size_t n = 0; n < n_; ++n) s[n] += a * static_cast<int64_t>(r[n]);
      }
      for (size_t n = 0; n < n_; ++n)
        acc[n] = c.k_block > 0 ? round_bf16(acc[n] + static_cast<float>(s[n]))
                               : static_cast<float>(s[n]);
    }
    for (size_t n = 0; n < n_; ++n) acc[n] = round_bf16(acc[n]);
  }
  return out;
}

class MatmulGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(MatmulGolden, AllFourKernelsBitExact) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const isa::Program p = c.build(spec);
    const core::RaceReport races = core::check_races(p, spec);
    EXPECT_TRUE(races.clean()) << core::format_race_report(races);
    EXPECT_GT(races.conflicting_pairs, 0u);
    const auto lhsT = small_ints(static_cast<size_t>(c.k * c.m), -4, 4, 11);
    const auto rhs = small_ints(static_cast<size_t>(c.k * c.n), -4, 4, 12);
    auto out = run(spec, p, {{"lhsT", lhsT}, {"rhs", rhs}});
    const std::vector<float> want = reference(c, lhsT, rhs);
    const std::vector<float>& got = out["result"];
    ASSERT_EQ(got.size(), want.size());
    size_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) bad += got[i] != want[i];
    EXPECT_EQ(bad, 0u) << "first: got " << got[0] << " want " << want[0];
  }
}

INSTANTIATE_TEST_SUITE_P(Generations, MatmulGolden, ::testing::ValuesIn(kGenerations));

// The structure each tutorial version is about: where the loads are and how large they are.
TEST(MatmulStructure, LoadsPerVersion) {
  const arch::ChipSpec& spec = chip("trn1");
  auto count = [](const isa::Program& p, isa::Engine e, isa::Opcode op) {
    size_t n = 0;
    for (const isa::Instruction& in : p.stream(e)) n += in.op == op;
    return n;
  };
  // Loads alternate between the Sync and Scalar streams (examples/kernels/tiling.h).
  auto loads = [&](const isa::Program& p) {
    const size_t sync = count(p, isa::Engine::kSync, isa::Opcode::kDmaCopy);
    const size_t act = count(p, isa::Engine::kScalar, isa::Opcode::kDmaCopy);
    EXPECT_LE(std::max(sync, act) - std::min(sync, act), 1u);  // balanced
    return sync + act;
  };
  const int64_t m = 512, k = 512, n = 2048;  // 4 x 4 x 4 tiles
  const isa::Program tiled = examples::matmul_tiled(spec, m, k, n);
  const isa::Program hoisted = examples::matmul_hoisted(spec, m, k, n);
  const isa::Program blocked = examples::matmul_blocked(spec, m, k, n);
  const isa::Program full = examples::matmul_fully_optimized(spec, m, k, n, {2, 2, 2});
  using isa::Engine;
  using isa::Opcode;
  // Tiled: two loads per (m, n, k); hoisted: lhsT per (m, k), rhs per (m, n, k).
  EXPECT_EQ(loads(tiled), 2u * 4 * 4 * 4);
  EXPECT_EQ(loads(hoisted), 4u * 4 + 4u * 4 * 4);
  // Blocked 2 x 2: lhsT per (m, k), rhs per (m block, n, k).
  EXPECT_EQ(loads(blocked), 4u * 4 + 2u * 4 * 4);
  // Fully optimised: one [128, BLOCK] load per K tile of each block.
  EXPECT_EQ(loads(full), 2u * (4 + 2 * 4));
  for (const isa::Program* p : {&tiled, &hoisted, &blocked, &full})
    EXPECT_EQ(count(*p, Engine::kTensor, Opcode::kMultiplyMoving), 4u * 4 * 4);
  // Stores: one per result tile, except the fully optimised kernel's one per M tile and N block.
  EXPECT_EQ(count(tiled, Engine::kGpSimd, Opcode::kDmaCopy), 16u);
  EXPECT_EQ(count(full, Engine::kGpSimd, Opcode::kDmaCopy), 4u * 2);
  const isa::Instruction& big = full.stream(Engine::kGpSimd).back();
  EXPECT_EQ(big.operands[0].elements(), 128 * 1024);  // [128, BLOCK_N]
}

}  // namespace
}  // namespace trnsim::kernel_test
