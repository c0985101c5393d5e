// Scalar registers, branches, the semantics table and the stochastic-rounding key.
#include <cmath>

#include "core/exec/semantics.h"
#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AluOp;
using isa::Engine;
using isa::Opcode;

TEST(SemanticsTable, EveryOpcodeHasSemantics) {
  for (int i = 0; i < isa::kNumOpcodes; ++i)
    EXPECT_NE(semantics_for(static_cast<isa::Opcode>(i)), nullptr) << i;
}

TEST(Registers, AluAndBranchConditions) {
  Harness h;
  isa::Params p;
  p.reg_dst = 1;
  p.reg_imm = -7;
  ASSERT_TRUE(h.run(make(Opcode::kRegSet, Engine::kSync, {}, p)));
  p.reg_dst = 2;
  p.reg_a = 1;
  p.op0 = AluOp::kMult;
  p.reg_imm = 0x40000000;  // wraps
  ASSERT_TRUE(h.run(make(Opcode::kRegAlu, Engine::kSync, {}, p)));
  EXPECT_EQ(h.exec().registers(Engine::kSync).get(2), static_cast<int32_t>(0x40000000u));
  EXPECT_EQ(h.exec().registers(Engine::kVector).get(2), 0);  // per engine
  isa::Params b;
  b.reg_a = 1;
  b.op0 = AluOp::kIsLt;
  b.reg_imm = 0;
  b.branch_target = 5;
  auto r = h.exec().execute(make(Opcode::kBranch, Engine::kSync, {}, b), Engine::kSync, 9);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.jump, 5);
  b.op0 = AluOp::kIsGt;
  r = h.exec().execute(make(Opcode::kBranch, Engine::kSync, {}, b), Engine::kSync, 10);
  EXPECT_FALSE(r.jump);
  p.op0 = AluOp::kDivide;
  p.reg_imm = 0;
  EXPECT_FALSE(h.run(make(Opcode::kRegAlu, Engine::kSync, {}, p)));
  p.reg_dst = 70;
  EXPECT_FALSE(h.run(make(Opcode::kRegSet, Engine::kSync, {}, p)));
  EXPECT_EQ(h.faults()[1].kind, mem::FaultKind::kRegister);
}

// Bits of one bf16 tensor_scalar written with stochastic rounding.
std::vector<uint64_t> sr_bits(uint64_t seed, uint64_t id) {
  ExecOptions o;
  o.seed = seed;
  Harness h(3, o);
  const auto src = sbuf(num::fp32(), 0, 128, 0, {64}), dst = sbuf(num::bf16(), 0, 128, 512, {64});
  std::vector<double> v(128 * 64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0 + static_cast<double>(i % 97) * 0x1p-14;
  h.put(src, v);
  isa::Params p;
  p.rounding = num::Rounding::kStochastic;
  h.exec().execute(make(Opcode::kTensorCopy, Engine::kVector, {dst, src}, p), Engine::kVector, id);
  return h.get_codes(dst);
}

TEST(StochasticRounding, ReproducibleAndKeyedBySeedAndInstruction) {
  const auto a = sr_bits(1, 0);
  EXPECT_EQ(a, sr_bits(1, 0));
  EXPECT_NE(a, sr_bits(2, 0));
  EXPECT_NE(a, sr_bits(1, 1));
  // Unbiased on average: the mean of the rounded values is close to the mean of the inputs.
  double in = 0, out = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    in += 1.0 + static_cast<double>(i % 97) * 0x1p-14;
    out += num::decode(num::bf16(), a[i]);
  }
  EXPECT_NEAR(out / static_cast<double>(a.size()), in / static_cast<double>(a.size()), 2e-4);
  // A chip without stochastic rounding faults instead of silently rounding to nearest.
  ExecOptions none;
  none.stochastic_rounding = false;
  Harness h(3, none);
  isa::Params p;
  p.rounding = num::Rounding::kStochastic;
  EXPECT_FALSE(h.run(make(Opcode::kTensorCopy, Engine::kVector,
                          {sbuf(num::bf16(), 0, 1, 0, {1}), sbuf(num::fp32(), 0, 1, 8, {1})}, p)));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kUnsupported);
}

}  // namespace
}  // namespace trnsim::core::testing
