// The one control step the functional executor, the timing sequencer and the race checker
// share (core/control/control_step.h), against hand-worked register values: 32-bit wrapping, the
// immediate or register right-hand side, taken and untaken branches, and faults that change
// nothing and name the bad register.
#include "core/control/control_step.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace trnsim::core {
namespace {

using isa::AluOp;
using isa::Opcode;

isa::Instruction control(Opcode op, int dst, int a, int b, int64_t imm, AluOp alu = AluOp::kBypass,
                         int32_t target = -1) {
  isa::Instruction in;
  in.op = op;
  in.p.reg_dst = dst;
  in.p.reg_a = a;
  in.p.reg_b = b;
  in.p.reg_imm = imm;
  in.p.op0 = alu;
  in.p.branch_target = target;
  return in;
}

TEST(ControlStep, RegSetTruncatesTo32Bits) {
  RegisterFile r;
  const ControlStep s = step_control(control(Opcode::kRegSet, 3, -1, -1, 0x1'8000'0001), r);
  EXPECT_TRUE(s.ok());
  EXPECT_FALSE(s.jump);
  EXPECT_EQ(s.next_pc(7), 8u);
  EXPECT_EQ(r.get(3), INT32_MIN + 1);
}

TEST(ControlStep, RegAluTakesTheImmediateOrRegisterB) {
  RegisterFile r;
  r.set(1, 0x7fff'ffff);
  r.set(2, -5);
  ASSERT_TRUE(step_control(control(Opcode::kRegAlu, 4, 1, -1, 1, AluOp::kAdd), r).ok());
  EXPECT_EQ(r.get(4), INT32_MIN);  // wraps
  ASSERT_TRUE(step_control(control(Opcode::kRegAlu, 4, 1, 2, 1000, AluOp::kMult), r).ok());
  EXPECT_EQ(r.get(4), -0x7fff'fffb);  // r2 = -5, not the immediate; (2^31 - 1) * -5 mod 2^32
}

TEST(ControlStep, BranchWhenBypassOrTheConditionHolds) {
  RegisterFile r;
  r.set(0, 3);
  EXPECT_EQ(step_control(control(Opcode::kBranch, -1, 0, -1, 4, AluOp::kIsLt, 1), r).jump, 1);
  EXPECT_FALSE(step_control(control(Opcode::kBranch, -1, 0, -1, 3, AluOp::kIsLt, 1), r).jump);
  r.set(5, 2);
  EXPECT_EQ(step_control(control(Opcode::kBranch, -1, 0, 5, 0, AluOp::kIsGt, 9), r).jump, 9);
  // Bypass jumps without reading a register, even a bad one.
  const ControlStep s = step_control(control(Opcode::kBranch, -1, 99, -1, 0, AluOp::kBypass, 6), r);
  EXPECT_EQ(s.jump, 6);
  EXPECT_EQ(s.next_pc(2), 6u);
}

TEST(ControlStep, FaultsChangeNothing) {
  RegisterFile r;
  r.set(1, 10);
  const auto fault = [&](const isa::Instruction& in) {
    const ControlStep s = step_control(in, r);
    EXPECT_FALSE(s.jump);
    EXPECT_EQ(s.next_pc(4), 5u);
    EXPECT_EQ(r.get(2), 0);
    return s.fault;
  };
  EXPECT_EQ(fault(control(Opcode::kRegSet, 64, -1, -1, 1)),
            "destination register 64 does not exist (0..63)");
  EXPECT_EQ(fault(control(Opcode::kRegAlu, 2, 70, -1, 1, AluOp::kAdd)),
            "source register 70 does not exist (0..63)");
  EXPECT_EQ(fault(control(Opcode::kRegAlu, 2, 1, 65, 1, AluOp::kAdd)),
            "source register 65 does not exist (0..63)");
  EXPECT_EQ(fault(control(Opcode::kRegAlu, 2, 1, -1, 0, AluOp::kDivide)),
            "register op " + std::to_string(static_cast<int>(AluOp::kDivide)) +
                " with operands 10 and 0 is not defined");
  EXPECT_EQ(fault(control(Opcode::kBranch, -1, 1, -1, 0, AluOp::kIsLt)), "branch without a target");
  EXPECT_EQ(fault(control(Opcode::kBranch, -1, -1, -1, 0, AluOp::kIsLt, 0)),
            "condition register -1 does not exist (0..63)");
  EXPECT_EQ(fault(control(Opcode::kBranch, -1, 1, -1, 0, AluOp::kAdd, 0)),
            "branch condition must be a comparison or logical op");
}

TEST(ControlStep, OtherOpsOnlyMoveOn) {
  RegisterFile r;
  const ControlStep s = step_control(control(Opcode::kNop, 1, 1, -1, 5, AluOp::kAdd, 0), r);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.next_pc(0), 1u);
  EXPECT_EQ(r.get(1), 0);
}

}  // namespace
}  // namespace trnsim::core
