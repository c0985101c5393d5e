// tensor_scalar_cumulative against a reference written here from the NKI API reference's
// pseudocode: r = op1(src[i] op0 imm0, r) (reverse0: imm0 op0 src[i]), dst[i] = r, in fp32, r
// from arg1 or, with accumulate, from the lane's VectorE accumulator, which keeps the last r.
#include <cmath>
#include <limits>
#include <vector>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AluOp;
using isa::Engine;
using isa::Opcode;

isa::Instruction cumulative(const isa::AccessPattern& dst, const isa::AccessPattern& src, AluOp op0,
                            float imm0, AluOp op1, float init, bool carry = false,
                            bool reverse0 = false) {
  isa::Params p;
  p.op0 = op0;
  p.arg0.imm = imm0;
  p.op1 = op1;
  p.arg1.imm = init;
  p.dma_accumulate = carry;
  p.reverse0 = reverse0;
  return make(Opcode::kTensorScalarCumulative, Engine::kVector, {dst, src}, p);
}

float apply(AluOp op, float a, float b) { return static_cast<float>(ref_alu(op, a, b)); }

TEST(Cumulative, RunningOpsAlongEachPartition) {
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    AluOp op0, op1;
    float imm0, init;
    bool reverse0;
  };
  for (const Case c : {Case{AluOp::kMult, AluOp::kAdd, 0.5f, 0.0f, false},
                       Case{AluOp::kAdd, AluOp::kMax, -1.0f, -inf, false},
                       Case{AluOp::kSubtract, AluOp::kMin, 3.0f, inf, true},
                       Case{AluOp::kAdd, AluOp::kMult, 1.0f, 1.0f, false},
                       Case{AluOp::kMult, AluOp::kSubtract, 2.0f, 0.25f, false}}) {
    Harness h;
    Rng rng(5);
    const int64_t rows = 64, n = 37;
    const auto src = sbuf(num::fp32(), 0, rows, 0, {n});
    const auto dst = sbuf(num::fp32(), 0, rows, 1024, {n});
    std::vector<double> x(static_cast<size_t>(rows * n));
    for (double& e : x) e = static_cast<double>(rng.next() % 64) / 32.0 - 1.0;
    h.put(src, x);
    ASSERT_TRUE(h.run(cumulative(dst, src, c.op0, c.imm0, c.op1, c.init, false, c.reverse0)));
    const auto got = h.get(dst);
    for (int64_t r = 0; r < rows; ++r) {
      float reg = c.init;
      for (int64_t i = 0; i < n; ++i) {
        const auto v = static_cast<float>(x[static_cast<size_t>(r * n + i)]);
        reg = apply(c.op1, c.reverse0 ? apply(c.op0, c.imm0, v) : apply(c.op0, v, c.imm0), reg);
        ASSERT_EQ(got[static_cast<size_t>(r * n + i)], reg) << "row " << r << " element " << i;
      }
    }
  }
}

// reduce_cmd.reduce: a row cumsum split over two instructions equals the one instruction.
TEST(Cumulative, TheAccumulatorCarriesARowAcrossInstructions) {
  Harness h;
  const int64_t rows = 8, n = 20;
  const auto src = sbuf(num::fp32(), 0, rows, 0, {n});
  const auto whole = sbuf(num::fp32(), 0, rows, 1024, {n});
  const auto parts = sbuf(num::fp32(), 0, rows, 2048, {n});
  std::vector<double> x(static_cast<size_t>(rows * n));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i % 7) - 2.5;
  h.put(src, x);
  ASSERT_TRUE(h.run(cumulative(whole, src, AluOp::kAdd, 0.0f, AluOp::kAdd, 0.0f)));
  auto half = [&](const isa::AccessPattern& ap, int64_t lo, int64_t hi) {
    isa::AccessPattern a = ap;
    a.offset += lo * 4;
    a.dims[0].size = hi - lo;
    return a;
  };
  ASSERT_TRUE(h.run(
      cumulative(half(parts, 0, 12), half(src, 0, 12), AluOp::kAdd, 0.0f, AluOp::kAdd, 0.0f)));
  ASSERT_TRUE(h.run(cumulative(half(parts, 12, n), half(src, 12, n), AluOp::kAdd, 0.0f, AluOp::kAdd,
                               0.0f, /*carry=*/true)));
  EXPECT_EQ(h.get(parts), h.get(whole));
}

TEST(Cumulative, ARunningOpOutsideTheFiveFaults) {
  Harness h;
  const auto src = sbuf(num::fp32(), 0, 4, 0, {8});
  const auto dst = sbuf(num::fp32(), 0, 4, 64, {8});
  h.put(src, std::vector<double>(32, 1.0));
  EXPECT_FALSE(h.run(cumulative(dst, src, AluOp::kAdd, 0.0f, AluOp::kDivide, 0.0f)));
}

}  // namespace
}  // namespace trnsim::core::testing
