// The functional runner: semaphores between streams, DMA in and out of named HBM tensors,
// loops on scalar registers, deadlock and runaway-loop faults, and real generations' specs.
#include <gtest/gtest.h>

#include <cmath>

#include "arch/arch.h"
#include "base/error.h"
#include "core/exec/functional_runner.h"
#include "exec_test_util.h"
#include "isa/assembler.h"
#include "isa/every_op_program.h"

namespace trnsim::core::testing {
namespace {

constexpr const char* kScale = R"(
.semaphores 2
.tensor X hbm bf16 [128, 64] input
.tensor Y hbm fp32 [128, 64] output
.engine sp
  dma_copy sbuf[0:128] [[1,64]] bf16 <- X[0:128] [[1,64]] signal=s0+1
  dma_copy Y[0:128] [[1,64]] <- sbuf[0:128]+1024 [[1,64]] fp32 wait=s1>=1
.engine dve
  tensor_scalar sbuf[0:128]+1024 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] bf16 op0=mult arg0=3 wait=s0>=1 signal=s1+1
)";

TEST(FunctionalRunner, SemaphoresOrderStreamsAndTensorsAreNamed) {
  const isa::Program prog = isa::assemble(kScale);
  FunctionalRunner run(test_core(3), {}, uint64_t{1} << 30, prog);
  std::vector<float> x(128 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 251) - 125.0f;
  run.write_tensor_f32("X", x);
  const RunResult r = run.run();
  ASSERT_TRUE(r.ok) << run.faults().to_string();
  EXPECT_EQ(r.instructions, 3u);
  EXPECT_EQ(r.per_engine[static_cast<size_t>(isa::Engine::kSync)], 2u);
  const auto y = run.read_tensor_f32("Y");
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 3.0f * x[i]);
  EXPECT_EQ(run.semaphore(1), 1);
  EXPECT_THROW(run.read_tensor("Z"), trnsim::InputError);
  EXPECT_THROW(run.write_tensor_f32("X", std::vector<float>(3)), trnsim::InputError);
}

TEST(FunctionalRunner, DeadlockNamesEachBlockedInstructionAndSemaphore) {
  const isa::Program prog = isa::assemble(R"(
.semaphores 4
.engine dve
  memset sbuf[0:1] [[1,4]] fp32 value=1 wait=s2>=1 name="needs_s2"
.engine act
  nop signal=s1+1
  nop wait=s3>=5
)");
  FunctionalRunner run(test_core(3), {}, 1 << 20, prog);
  const RunResult r = run.run();
  EXPECT_FALSE(r.ok);
  ASSERT_EQ(run.faults().size(), 2u) << run.faults().to_string();
  const std::string a = run.faults()[0].to_string(), b = run.faults()[1].to_string();
  EXPECT_EQ(run.faults()[0].kind, mem::FaultKind::kDeadlock);
  EXPECT_NE(a.find("memset on dve 'needs_s2'"), std::string::npos) << a;
  EXPECT_NE(a.find("semaphore 2 >= 1 (it is 0)"), std::string::npos) << a;
  EXPECT_NE(b.find("nop on act"), std::string::npos) << b;
  EXPECT_NE(b.find("act[1]"), std::string::npos) << b;
  EXPECT_NE(b.find("semaphore 3 >= 5"), std::string::npos) << b;
}

// HARDWARE.md s5 (RM): fp16 1024 + 0.5, 2048 times, is 1024 under round-to-nearest-even and
// about 2048 under stochastic rounding. The loop runs on scalar registers; each iteration is a
// new issue of the instruction, so it draws fresh random bits.
std::string accumulate_program(const char* rounding) {
  return std::string(R"(
.seed 3
.tensor O hbm fp16 [1, 1] output
.engine dve
  memset sbuf[0:1] [[1,1]] fp16 value=1024
  reg_set rd=r0 imm=0
loop:
  tensor_scalar sbuf[0:1] [[1,1]] fp16 <- sbuf[0:1] [[1,1]] fp16 op0=add arg0=0.5 rounding=)") +
         rounding + R"(
  reg_alu rd=r0 ra=r0 op0=add imm=1
  branch target=loop ra=r0 op0=is_lt imm=2048
  dma_copy O[0:1] [[1,1]] <- sbuf[0:1] [[1,1]] fp16
)";
}

TEST(FunctionalRunner, LoopsOnRegistersAndStochasticRoundingAccumulates) {
  const isa::Program rne = isa::assemble(accumulate_program("rne"));
  FunctionalRunner a(test_core(3), {}, 1 << 20, rne);
  ASSERT_TRUE(a.run().ok) << a.faults().to_string();
  EXPECT_EQ(a.read_tensor_f32("O")[0], 1024.0f);
  const isa::Program sr = isa::assemble(accumulate_program("stochastic"));
  ExecOptions o;
  o.seed = sr.seed;
  FunctionalRunner b(test_core(3), o, 1 << 20, sr);
  const RunResult r = b.run();
  ASSERT_TRUE(r.ok) << b.faults().to_string();
  EXPECT_EQ(r.instructions, 2 + 3 * 2048 + 1u);
  const float v = b.read_tensor_f32("O")[0];
  EXPECT_GT(v, 1950.0f);
  EXPECT_LT(v, 2150.0f);
  FunctionalRunner c(test_core(3), o, 1 << 20, sr);  // deterministic
  ASSERT_TRUE(c.run().ok);
  EXPECT_EQ(c.read_tensor_f32("O")[0], v);
}

TEST(FunctionalRunner, RunawayLoopHitsTheStepLimitAndFaultsStop) {
  const isa::Program prog = isa::assemble(R"(
.engine pool
top:
  branch target=top
)");
  RunOptions ro;
  ro.max_instructions = 1000;
  FunctionalRunner run(test_core(3), {}, 1 << 20, prog, ro);
  EXPECT_FALSE(run.run().ok);
  ASSERT_EQ(run.faults().size(), 1u);
  EXPECT_EQ(run.faults()[0].kind, mem::FaultKind::kStepLimit);
  // A faulting instruction stops the run; its position in the stream is named.
  const isa::Program bad = isa::assemble(R"(
.engine pool
  memset sbuf[0:1] [[1,4]] fp32 value=1
  memset psum[0:1] [[1,4]] fp32 value=1
  memset sbuf[0:1] [[1,4]] fp32 value=2
)");
  FunctionalRunner run2(test_core(3), {}, 1 << 20, bad);
  const RunResult r = run2.run();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.instructions, 2u);
  EXPECT_NE(run2.faults()[0].to_string().find("at pool[1]"), std::string::npos)
      << run2.faults()[0].to_string();
}

TEST(FunctionalRunner, RealGenerations) {
  for (const char* name : {"trn1", "trn2", "trn3"}) {
    const arch::ChipSpec chip = arch::load_chip(name);
    const isa::Program prog = isa::assemble(kScale);
    FunctionalRunner run(chip, prog);
    run.write_tensor_f32("X", std::vector<float>(128 * 64, 1.5f));
    ASSERT_TRUE(run.run().ok) << name << ": " << run.faults().to_string();
    EXPECT_EQ(run.read_tensor_f32("Y")[100], 4.5f) << name;
  }
  // Every opcode once, on the generation it was written for. Alone, a core has no peer for
  // its sendrecv (kPeer: chip/spmd_run.h runs it with one) and no other rank for its
  // collective (fabric/rank_run.h); everything else runs clean.
  const isa::Program every = isa::assemble(kEveryOpProgram);
  RunOptions go_on;
  go_on.stop_on_fault = false;
  FunctionalRunner run(arch::load_chip("trn3"), every, go_on);
  run.write_tensor_f32("A", std::vector<float>(128 * 512, 0.25f));
  run.write_tensor_f32("B", std::vector<float>(128 * 512, -2.0f));
  const RunResult r = run.run();
  ASSERT_EQ(run.faults().size(), 3u) << run.faults().to_string();
  EXPECT_EQ(run.faults()[0].kind, mem::FaultKind::kPeer);
  EXPECT_NE(run.faults()[0].instruction.find("sendrecv"), std::string::npos);
  EXPECT_EQ(run.faults()[1].kind, mem::FaultKind::kPeer);
  EXPECT_NE(run.faults()[1].instruction.find("collective"), std::string::npos);
  EXPECT_EQ(run.faults()[2].kind, mem::FaultKind::kPeer);
  EXPECT_NE(run.faults()[2].instruction.find("collective_v"), std::string::npos);
  EXPECT_EQ(r.instructions, every.num_instructions() + 3 * 3);  // the act loop runs 4 times
}

}  // namespace
}  // namespace trnsim::core::testing
