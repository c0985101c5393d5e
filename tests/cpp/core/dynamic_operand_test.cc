// Register-relative operands and the sequencer's memory registers (reg_load, reg_store): the
// same values in functional-only and functional + timing runs, loops whose trip count is data,
// the bounds check of a register outside its range, validation at both ends of the range, the
// published cost floor, the text form and the race checker's conservative footprint.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/cost/cost.h"
#include "core/race/race_check.h"
#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"
#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/validate.h"

namespace trnsim::core {
namespace {

using namespace testing;

// A loop whose trip count is read from memory: N[0] iterations, iteration i copies row i of X
// (HBM, a dynamic DMA source) into SBUF and stores it to row i of Y (a dynamic destination).
// The count also goes back to HBM through reg_store (as fp32: converted).
constexpr const char* kRowsLoop = R"(
.semaphores 2
.tensor N hbm int32 [1, 1] input
.tensor X hbm fp32 [8, 16] input
.tensor Y hbm fp32 [8, 16] output
.tensor C hbm fp32 [1, 1] output
.engine sp
  reg_load N[0:1] [[1,1]] rd=r1
  reg_store C[0:1] [[1,1]] ra=r1
  reg_set rd=r0 imm=0
loop:
  dma_copy sbuf[0:1] [[1,16]] fp32 <- X[0:1]+r0*16<=7 [[1,16]] queue=0 signal=s0+1
  dma_copy Y[0:1]+r0*16<=7 [[1,16]] <- sbuf[0:1] [[1,16]] fp32 queue=0 wait=s0>=1 signal=s0-1
  reg_alu rd=r0 ra=r0 op0=add imm=1
  branch target=loop ra=r0 op0=is_lt rb=r1
)";

std::vector<float> rows_input() {
  std::vector<float> x(8 * 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) + 0.5f;
  return x;
}

void write_count(FunctionalRunner& f, int32_t n) {
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &n, 4);
  f.write_tensor("N", bytes);
}

TEST(DynamicOperands, ALoopOverRowsCountedByMemoryInBothValueModes) {
  const isa::Program p = isa::assemble(kRowsLoop, "rows.s");
  for (RunMode mode : {RunMode::kFunctionalOnly, RunMode::kFunctionalTiming}) {
    CoreRunner run(chip("trn2"), p, mode);
    run.functional().write_tensor_f32("X", rows_input());
    run.functional().write_tensor_f32("Y", std::vector<float>(8 * 16, -1.0f));
    write_count(run.functional(), 5);
    const TimingResult r = run.run();
    ASSERT_TRUE(r.ok()) << r.faults.to_string();
    const std::vector<float> y = run.functional().read_tensor_f32("Y");
    const std::vector<float> x = rows_input();
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_EQ(y[i], i < 5 * 16 ? x[i] : -1.0f)
          << "element " << i << " mode " << static_cast<int>(mode);
    EXPECT_EQ(run.functional().read_tensor_f32("C"), std::vector<float>{5.0f});
    // reg_load, reg_store, reg_set, then 4 per iteration.
    EXPECT_EQ(r.instructions, 3u + 4u * 5u);
  }
}

TEST(DynamicOperands, ARegisterOutsideItsRangeFaultsAndMovesNothing) {
  const isa::Program p = isa::assemble(kRowsLoop, "rows.s");
  for (RunMode mode : {RunMode::kFunctionalOnly, RunMode::kFunctionalTiming}) {
    CoreRunner run(chip("trn2"), p, mode, RunLimits{});
    run.functional().write_tensor_f32("X", rows_input());
    run.functional().write_tensor_f32("Y", std::vector<float>(8 * 16, -1.0f));
    write_count(run.functional(), 9);  // row 8 is past the tensor (r0 <= 7)
    const TimingResult r = run.run();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.faults[0].kind, mem::FaultKind::kIndexRange) << r.faults.to_string();
    EXPECT_NE(r.faults[0].message.find("r0 = 8 outside 0..7"), std::string::npos)
        << r.faults.to_string();
    const std::vector<float> y = run.functional().read_tensor_f32("Y");
    EXPECT_EQ(y[7 * 16], rows_input()[7 * 16]);  // rows 0..7 were copied
  }
}

TEST(DynamicOperands, ATimingOnlyRunHasNoValueToLoad) {
  const isa::Program p = isa::assemble(kRowsLoop, "rows.s");
  CoreRunner run(chip("trn2"), p, RunMode::kTimingOnly);
  const TimingResult r = run.run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.faults[0].kind, mem::FaultKind::kUnsupported);
  EXPECT_NE(r.faults[0].message.find("timing-only"), std::string::npos);
}

// The sequencer reads r0 when the copy issues: the reg_alu right after it must not change
// which bytes the copy reads, though the copy completes later.
TEST(DynamicOperands, TheRegisterIsReadAtIssue) {
  const isa::Program q = isa::assemble(R"(
.semaphores 1
.tensor O hbm fp32 [1, 4] output
.engine pool
  iota sbuf[0:1] [[1,64]] fp32 channel_multiplier=0
  reg_set rd=r0 imm=3
  tensor_copy sbuf[0:1]+1024 [[1,4]] fp32 <- sbuf[0:1]+r0*16<=12 [[1,4]] fp32 signal=s0+1
  reg_set rd=r0 imm=0
.engine sp
  dma_copy O[0:1] [[1,4]] <- sbuf[0:1]+1024 [[1,4]] fp32 wait=s0>=1
)",
                                       "issue.s");
  for (RunMode mode : {RunMode::kFunctionalOnly, RunMode::kFunctionalTiming}) {
    CoreRunner run(chip("trn2"), q, mode);
    const TimingResult r = run.run();
    ASSERT_TRUE(r.ok()) << r.faults.to_string();
    EXPECT_EQ(run.functional().read_tensor_f32("O"),
              (std::vector<float>{12.0f, 13.0f, 14.0f, 15.0f}));
  }
}

TEST(DynamicOperands, ValidationChecksBothEndsAndTheRegister) {
  const auto rules = [](const std::string& operand) {
    const isa::Program p = isa::assemble(
        ".engine dve\n  tensor_copy sbuf[0:128]+1024 [[1,64]] fp32 <- " + operand + "\n", "v.s");
    std::vector<std::string> out;
    for (const isa::Diagnostic& d : isa::validate(p, chip("trn2")))
      out.push_back(std::string(isa::kRuleKindNames.name(d.kind)) + ": " + d.message);
    return out;
  };
  EXPECT_TRUE(rules("sbuf[0:128]+r2*256<=100 [[1,64]] fp32").empty());
  // 120 steps of 2048 bytes reach past the 224 KiB of a trn2 SBUF partition.
  const std::vector<std::string> past = rules("sbuf[0:128]+r2*2048<=120 [[1,64]] fp32");
  ASSERT_EQ(past.size(), 1u);
  EXPECT_NE(past[0].find("(register at 120)"), std::string::npos) << past[0];
  EXPECT_EQ(past[0].rfind("bounds", 0), 0u) << past[0];
  // Below 0 at the top of the range (a negative step).
  const std::vector<std::string> below = rules("sbuf[0:128]+64+r2*-32<=4 [[1,64]] fp32");
  ASSERT_FALSE(below.empty());
  for (const std::string& m : below) EXPECT_NE(m.find("(register at 4)"), std::string::npos) << m;
  // A step whose range passes int64 saturates and is out of bounds, not undefined.
  EXPECT_FALSE(rules("sbuf[0:128]+r2*4611686018427387904<=3 [[1,64]] fp32").empty());
  EXPECT_THROW(isa::assemble(".engine dve\n  tensor_copy sbuf[0:1] [[1,4]] fp32 <- "
                             "sbuf[0:1]+r64*4<=3 [[1,4]] fp32\n",
                             "v.s"),
               InputError);
}

TEST(DynamicOperands, HbmRangeStaysInOneTensor) {
  const isa::Program p = isa::assemble(R"(
.tensor A hbm fp32 [4, 16] input
.tensor B hbm fp32 [4, 16] input
.engine sp
  dma_copy sbuf[0:1] [[1,16]] fp32 <- A[0:1]+r0*16<=7 [[1,16]]
)",
                                       "t.s");
  bool found = false;
  for (const isa::Diagnostic& d : isa::validate(p, chip("trn2")))
    found |= d.kind == isa::RuleKind::kHbmRange;
  EXPECT_TRUE(found);  // rows 4..7 would be B's
}

TEST(DynamicOperands, TextRoundTrip) {
  const std::string text = R"(.tensor A hbm fp32 [4, 16] input
.engine sp
  dma_copy sbuf[0:1]+64+r5*128<=6 [[1,16]] fp32 <- A[0:1]+r3*16<=3 [[1,16]]
  reg_load sbuf[7:8]+4 [[1,1]] int32 rd=r63
  reg_store A[0:1]+r1*1<=63 [[1,1]] ra=r2
)";
  const isa::Program p = isa::assemble(text, "t.s");
  const isa::AccessPattern& src = p.stream(isa::Engine::kSync)[0].operands[1];
  EXPECT_EQ(src.dyn_reg, 3);
  EXPECT_EQ(src.dyn_step, 64);  // 16 fp32 elements, in bytes
  EXPECT_EQ(src.dyn_max, 3);
  const std::string again = isa::disassemble(p);
  EXPECT_NE(again.find("sbuf[0:1]+64+r5*128<=6"), std::string::npos) << again;
  EXPECT_NE(again.find("A[0:1]+r3*16<=3"), std::string::npos) << again;
  const isa::Program q = isa::assemble(again, "again.s");
  EXPECT_EQ(isa::disassemble(q), again);
}

TEST(DynamicOperands, CostFloorIsMinIiDynamic) {
  const isa::Program p = isa::assemble(R"(
.engine dve
  tensor_copy sbuf[0:128]+1024 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32
  tensor_copy sbuf[0:128]+1024 [[1,64]] fp32 <- sbuf[0:128]+r0*4<=8 [[1,64]] fp32
  reg_load sbuf[0:1] [[1,1]] int32 rd=r0
)",
                                       "c.s");
  const auto& s = p.stream(isa::Engine::kVector);
  const arch::CoreSpec& core = chip("trn2").core;
  EXPECT_LT(instruction_cost(s[0], core).ii, 600u);
  EXPECT_EQ(instruction_cost(s[1], core).ii, 600u);  // max(MIN_II_DYNAMIC, N)
  EXPECT_EQ(instruction_cost(s[2], core).ii, 140u);
  // A register-relative DMA's descriptors: software DGE where there is no hardware DGE (trn1),
  // the hardware DGE's time otherwise; a static DMA without DGE is one sequencer cycle.
  const isa::Program d = isa::assemble(R"(
.tensor A hbm fp32 [4, 16] input
.engine pool
  dma_copy sbuf[0:1] [[1,16]] fp32 <- A[0:1]+r0*16<=3 [[1,16]]
  dma_copy sbuf[0:1] [[1,16]] fp32 <- A[0:1] [[1,16]]
)",
                                       "d.s");
  const auto& ds = d.stream(isa::Engine::kGpSimd);
  const arch::CoreSpec& trn1 = chip("trn1").core;
  EXPECT_EQ(instruction_cost(ds[0], trn1).ii,
            static_cast<uint64_t>(std::ceil(600.0 * trn1.gpsimd.clock_ghz)));
  EXPECT_EQ(instruction_cost(ds[1], trn1).ii, 1u);
  EXPECT_EQ(instruction_cost(ds[0], core).ii, instruction_cost(ds[1], core).ii);
}

// A dynamic write may reach any byte of its range: an unordered read of the range's far end
// races; a branch on a loaded register leaves the program unchecked, and says why.
TEST(DynamicOperands, RaceCheckerIsConservativeAndStopsAtDataBranches) {
  const RaceReport r = check_races(isa::assemble(R"(
.engine dve
  reg_set rd=r0 imm=0
  memset sbuf[0:128]+r0*4<=15 [[1,4]] fp32 value=1
.engine act
  activation sbuf[0:128]+4096 [[1,4]] fp32 <- sbuf[0:128]+60 [[1,4]] fp32
)",
                                                 "r.s"),
                                   chip("trn2"));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, FindingKind::kReadAfterWrite);

  const RaceReport d = check_races(isa::assemble(R"(
.engine dve
  reg_load sbuf[0:1] [[1,1]] int32 rd=r1
loop:
  reg_alu rd=r1 ra=r1 op0=subtract imm=1
  branch target=loop ra=r1 op0=is_gt imm=0
)",
                                                 "d.s"),
                                   chip("trn2"));
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kTooBig);
  EXPECT_NE(d.findings[0].detail.find("reg_load"), std::string::npos) << d.findings[0].detail;
}

}  // namespace
}  // namespace trnsim::core
