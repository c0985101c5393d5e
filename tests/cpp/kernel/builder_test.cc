// The kernel API end to end on the smallest useful kernel: one matmul, loads and a store.
#include "kernel/builder.h"

#include <gtest/gtest.h>

#include "core/race/race_check.h"
#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace trnsim::kernel_test {
namespace {

using isa::Engine;
using kernel::KernelBuilder;
using kernel::Tensor;
using kernel::Tile;

isa::Program one_matmul(const arch::ChipSpec& c) {
  KernelBuilder kb(c);
  Tensor a = kb.input("a", num::bf16(), {128, 64});
  Tensor b = kb.input("b", num::bf16(), {128, 512});
  Tensor out = kb.output("c", num::fp32(), {64, 512});
  Tile at = kb.sbuf("at", num::bf16(), {128, 64});
  Tile bt = kb.sbuf("bt", num::bf16(), {128, 512});
  kb.dma_copy(at, a);
  kb.dma_copy(bt, b);
  Tile acc = kb.psum("acc", num::fp32(), {64, 512});
  kb.matmul(acc, at, bt);
  Tile res = kb.sbuf("res", num::fp32(), {64, 512});
  kb.tensor_copy(res, acc);
  kb.dma_copy(out, res);
  return kb.build();
}

TEST(KernelBuilder, OneMatmulStructure) {
  const isa::Program p = one_matmul(chip("trn2"));
  EXPECT_EQ(p.chip, "trn2");
  ASSERT_EQ(p.tensors.size(), 3u);
  // Loads from Sync, the store from GpSimd (the default DMA policy), LS + MM on PE, copy on DVE.
  EXPECT_EQ(p.stream(Engine::kSync).size(), 2u);
  EXPECT_EQ(p.stream(Engine::kGpSimd).size(), 1u);
  ASSERT_EQ(p.stream(Engine::kTensor).size(), 2u);
  EXPECT_EQ(p.stream(Engine::kVector).size(), 1u);
  const isa::Instruction& mm = p.stream(Engine::kTensor)[1];
  EXPECT_EQ(mm.op, isa::Opcode::kMultiplyMoving);
  EXPECT_EQ(mm.p.acc, isa::AccumulateFlag::kWhole);  // a group of one
  // The LS waits for the load of a, the MM for the load of b (different DMA queue agents: the
  // two loads rotate over engines only when narrower than all 16; these use all of them, so
  // both go to queue 0 of the Sync stream and one agent: waiting for the second covers both).
  const auto& ls = p.stream(Engine::kTensor)[0];
  EXPECT_EQ(ls.waits.size() + mm.waits.size(), 2u);
  EXPECT_EQ(p.stream(Engine::kVector)[0].waits.size(), 1u);  // RAW on the MM
  EXPECT_EQ(p.stream(Engine::kGpSimd)[0].waits.size(), 1u);  // RAW on the copy
  EXPECT_TRUE(core::check_races(p, chip("trn2")).clean());
}

TEST(KernelBuilder, OneMatmulRunsOnEveryGeneration) {
  for (const std::string& g : kGenerations) {
    SCOPED_TRACE(g);
    const isa::Program p = one_matmul(chip(g));
    const std::vector<float> a = small_ints(128 * 64, -3, 3, 1),
                             b = small_ints(128 * 512, -3, 3, 2);
    auto out = run(chip(g), p, {{"a", a}, {"b", b}});
    const std::vector<float>& c = out["c"];
    ASSERT_EQ(c.size(), 64u * 512u);
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < 512; ++n) {
        double s = 0;
        for (int k = 0; k < 128; ++k) s += double{a[k * 64 + m]} * b[k * 512 + n];
        ASSERT_EQ(c[m * 512 + n], s) << "m=" << m << " n=" << n;
      }
  }
}

TEST(KernelBuilder, DisassemblesWithSemaphores) {
  const isa::Program p = one_matmul(chip("trn1"));
  const std::string text = isa::disassemble(p);
  EXPECT_NE(text.find("load_stationary"), std::string::npos);
  EXPECT_NE(text.find("wait="), std::string::npos) << text;
  EXPECT_NE(text.find("signal="), std::string::npos) << text;
}

// What the API emits is plain ISA: every example survives the text form unchanged (so it sets
// only the parameters its ops take) and can be saved and reloaded.
TEST(KernelBuilder, ExamplesRoundTripThroughText) {
  const arch::ChipSpec& c = chip("trn2");
  for (const isa::Program& p :
       {examples::matmul_fully_optimized(c, 256, 256, 1024, {1, 1, 1}),
        examples::layernorm(c, 130, 600), examples::attention(c, 256, 64, true)}) {
    const isa::Program back = isa::assemble(isa::disassemble(p));
    EXPECT_TRUE(back == p);
  }
}

}  // namespace
}  // namespace trnsim::kernel_test
