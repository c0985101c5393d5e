// activate2 (NC-v4 ScalarE) against a reference written here from the NKI API reference:
// val = data op0 imm0 (imm0 op0 data with reverse0), then op1 imm1 (reversible), each an FP32
// operation; dst = func(val); activate2_reduce also reduce_op of each row of the FP32 results.
#include <cmath>
#include <vector>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AluOp;
using isa::Engine;
using isa::Opcode;

float step(AluOp op, bool reverse, float x, float s) {
  if (op == AluOp::kBypass) return x;
  return static_cast<float>(reverse ? ref_alu(op, s, x) : ref_alu(op, x, s));
}

struct Case {
  AluOp op0, op1;
  bool reverse0, reverse1;
};

TEST(Activate2, TheSixAluPairsThenExp) {
  const Case cases[] = {{AluOp::kMult, AluOp::kAdd, false, false},
                        {AluOp::kMult, AluOp::kSubtract, false, true},
                        {AluOp::kMult, AluOp::kBypass, false, false},
                        {AluOp::kAdd, AluOp::kBypass, true, false},
                        {AluOp::kSubtract, AluOp::kBypass, true, false},
                        {AluOp::kBypass, AluOp::kBypass, false, false}};
  for (const Case& c : cases) {
    Harness h(4);
    Rng rng(21);
    const int rows = 64, n = 96;
    const auto src = sbuf(num::bf16(), 0, rows, 0, {n});
    const auto col = sbuf(num::fp32(), 0, rows, 4096, {1});  // imm1 per partition
    const auto dst = sbuf(num::fp32(), 0, rows, 8192, {n});
    const std::vector<double> x = rng.values(num::bf16(), static_cast<size_t>(rows * n), 3.0);
    const std::vector<double> b = rng.values(num::fp32(), static_cast<size_t>(rows), 2.0);
    h.put(src, x);
    h.put(col, b);
    isa::Params p;
    p.func = isa::ActFunc::kExp;
    p.op0 = c.op0;
    p.reverse0 = c.reverse0;
    p.arg0.imm = 0.375f;
    p.op1 = c.op1;
    p.reverse1 = c.reverse1;
    p.arg1.operand = 2;
    ASSERT_TRUE(h.run(make(Opcode::kActivate2, Engine::kScalar, {dst, src, col}, p)));
    std::vector<double> want(x.size());
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(r * n + i);
        const float v =
            step(c.op1, c.reverse1, step(c.op0, c.reverse0, static_cast<float>(x[k]), 0.375f),
                 static_cast<float>(b[static_cast<size_t>(r)]));
        want[k] = static_cast<float>(std::exp(static_cast<double>(v)));
      }
    EXPECT_EQ(h.get(dst), want) << static_cast<int>(c.op0) << " " << static_cast<int>(c.op1);
  }
}

TEST(Activate2, ReduceOpsOverEachRow) {
  for (const AluOp red : {AluOp::kAdd, AluOp::kMax, AluOp::kAbsMax}) {
    Harness h(4);
    Rng rng(4);
    const int rows = 32, n = 50;
    const auto src = sbuf(num::fp32(), 0, rows, 0, {n});
    const auto dst = sbuf(num::bf16(), 0, rows, 4096, {n});
    const auto res = sbuf(num::fp32(), 0, rows, 8192, {1});
    const std::vector<double> x = rng.values(num::fp32(), static_cast<size_t>(rows * n), 4.0);
    h.put(src, x);
    isa::Params p;
    p.func = isa::ActFunc::kCopy;
    p.op0 = AluOp::kMult;
    p.arg0.imm = -1.5f;
    p.reduce_op = red;
    ASSERT_TRUE(h.run(make(Opcode::kActivate2Reduce, Engine::kScalar, {dst, res, src}, p)));
    std::vector<double> want(static_cast<size_t>(rows));
    for (int r = 0; r < rows; ++r) {
      float acc = static_cast<float>(x[static_cast<size_t>(r * n)]) * -1.5f;
      for (int i = 1; i < n; ++i)
        acc = static_cast<float>(
            ref_alu(red, acc, static_cast<float>(x[static_cast<size_t>(r * n + i)]) * -1.5f));
      want[static_cast<size_t>(r)] = acc;
    }
    EXPECT_EQ(h.get(res), want) << static_cast<int>(red);
  }
}

TEST(Activate2, NeedsNcV4) {
  Harness h(3);
  const auto src = sbuf(num::fp32(), 0, 4, 0, {8});
  const auto dst = sbuf(num::fp32(), 0, 4, 1024, {8});
  EXPECT_FALSE(h.run(make(Opcode::kActivate2, Engine::kScalar, {dst, src})));
  ASSERT_FALSE(h.faults().empty());
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kUnsupported);
}

}  // namespace
}  // namespace trnsim::core::testing
