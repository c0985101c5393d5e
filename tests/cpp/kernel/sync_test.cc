// The dependency rule (kernel/sync_resolver.h) on small programs: which instructions wait and
// signal, pruning by what a stream already knows, accumulation groups, stationary reuse, and
// that the independent race check (core/race/race_check.h) catches a missing wait.
#include <gtest/gtest.h>

#include "core/race/race_check.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace trnsim::kernel_test {
namespace {

using isa::AccumulateFlag;
using isa::Engine;
using kernel::all;
using kernel::KernelBuilder;

const isa::Instruction& at(const isa::Program& p, Engine e, size_t i) { return p.stream(e).at(i); }

TEST(Sync, SameEngineNeedsNoSemaphore) {
  KernelBuilder kb(chip("trn2"));
  auto a = kb.sbuf("a", num::fp32(), {128, 64});
  auto b = kb.sbuf("b", num::fp32(), {128, 64});
  kb.memset(a, 1.0);
  kb.tensor_scalar(b, a, {isa::AluOp::kAdd, 1.0f});  // RAW on VectorE itself
  kb.tensor_copy(a, b);                              // WAR and RAW, same engine
  const isa::Program p = kb.build();
  EXPECT_EQ(p.num_semaphores, 0);
  for (const auto& in : p.stream(Engine::kVector)) EXPECT_TRUE(in.waits.empty());
}

TEST(Sync, CrossEngineRawWarWaw) {
  KernelBuilder kb(chip("trn2"));
  auto t = kb.sbuf("t", num::fp32(), {128, 64});
  auto u = kb.sbuf("u", num::fp32(), {128, 64});
  // Partial writes: a write of all of t would start a new value of t, which the placement
  // puts elsewhere (placement.h), with no conflict.
  const auto half = kernel::Idx{0, 32};
  kb.memset(t, 1.0);                                               // dve[0] writes t
  kb.activation(u, t, isa::ActFunc::kExp);                         // act[0] reads t: RAW on dve
  kb.memset(t(all, half), 2.0);                                    // dve[1]: WAR on act[0]
  kb.activation(t(all, half), u(all, half), isa::ActFunc::kCopy);  // act[1]: WAW on dve[1]
  const isa::Program p = kb.build();
  ASSERT_EQ(p.num_semaphores, 2);  // one per engine that others wait for
  const auto& act0 = at(p, Engine::kScalar, 0);
  const auto& dve1 = at(p, Engine::kVector, 1);
  const auto& act1 = at(p, Engine::kScalar, 1);
  ASSERT_EQ(act0.waits.size(), 1u);
  ASSERT_EQ(dve1.waits.size(), 1u);
  ASSERT_EQ(act1.waits.size(), 1u);
  // Counting semaphores: the first producer of each engine reaches 1, the second 2.
  EXPECT_EQ(act0.waits[0].value, 1);
  EXPECT_EQ(dve1.waits[0].value, 1);
  EXPECT_EQ(act1.waits[0].value, 2);
  EXPECT_EQ(at(p, Engine::kVector, 0).signals.size(), 1u);
  EXPECT_EQ(at(p, Engine::kScalar, 0).signals.size(), 1u);
  EXPECT_TRUE(core::check_races(p, chip("trn1")).clean());
}

TEST(Sync, KnownCompletionsArePruned) {
  KernelBuilder kb(chip("trn1"));
  auto x = kb.input("x", num::bf16(), {128, 128});
  auto y = kb.input("y", num::bf16(), {128, 512});
  auto xt = kb.sbuf("xt", num::bf16(), {128, 128});
  auto yt = kb.sbuf("yt", num::bf16(), {128, 512});
  auto ps = kb.psum("ps", num::fp32(), {128, 512});
  auto out = kb.sbuf("out", num::fp32(), {128, 512});
  kb.dma_copy(xt, x);
  kb.dma_copy(yt, y);
  kb.matmul(ps, xt, yt);                             // waits for the loads
  kb.tensor_copy(out, ps);                           // waits for the PE only
  kb.tensor_tensor(out, out, yt, isa::AluOp::kAdd);  // reads yt: the PE knew it loaded: no wait
  const isa::Program p = kb.build();
  EXPECT_EQ(at(p, Engine::kVector, 0).waits.size(), 1u);
  EXPECT_TRUE(at(p, Engine::kVector, 1).waits.empty());
  EXPECT_GE(kb.sync_stats().pruned, 1);
  EXPECT_TRUE(core::check_races(p, chip("trn1")).clean());
}

TEST(Sync, AccumulationGroups) {
  KernelBuilder kb(chip("trn1"));
  auto st = kb.sbuf("st", num::bf16(), {128, 4, 128});
  auto mv = kb.sbuf("mv", num::bf16(), {128, 4, 512});
  kb.memset(st, 0.5);
  kb.memset(mv, 0.5);
  auto ps = kb.psum("ps", num::fp32(), {128, 512});
  auto res = kb.sbuf("res", num::fp32(), {128, 512});
  for (int k = 0; k < 4; ++k) kb.matmul(ps, st(all, k), mv(all, k));
  kb.tensor_copy(res, ps);                                 // ends the group
  kb.matmul(ps, st(all, 0), mv(all, 0));                   // a new group of one
  kb.matmul(ps, st(all, 1), mv(all, 1), {.start = true});  // explicitly new again
  const isa::Program p = kb.build();
  std::vector<AccumulateFlag> flags;
  for (const auto& in : p.stream(Engine::kTensor))
    if (in.op == isa::Opcode::kMultiplyMoving) flags.push_back(in.p.acc);
  EXPECT_EQ(flags, (std::vector<AccumulateFlag>{AccumulateFlag::kFirst, AccumulateFlag::kMiddle,
                                                AccumulateFlag::kMiddle, AccumulateFlag::kLast,
                                                AccumulateFlag::kWhole, AccumulateFlag::kWhole}));
  auto out = run(chip("trn1"), p, {});
  (void)out;
}

TEST(Sync, StationaryLoadedOnceForBackToBackMatmuls) {
  KernelBuilder kb(chip("trn2"));
  auto st = kb.sbuf("st", num::bf16(), {128, 128});
  auto mv = kb.sbuf("mv", num::bf16(), {128, 2, 512});
  auto ps = kb.psum("ps", num::fp32(), {128, 2, 512});
  kb.memset(st, 1.0);
  kb.memset(mv, 1.0);
  kb.matmul(ps(all, 0), st, mv(all, 0));
  kb.matmul(ps(all, 1), st, mv(all, 1));
  kb.memset(st, 2.0);  // overwritten: the next matmul loads it again
  kb.matmul(ps(all, 0), st, mv(all, 0));
  const isa::Program p = kb.build();
  size_t ls = 0;
  for (const auto& in : p.stream(Engine::kTensor)) ls += in.op == isa::Opcode::kLoadStationary;
  EXPECT_EQ(ls, 2u);
}

TEST(Sync, RaceCheckCatchesAMissingWait) {
  isa::Program p = examples::matmul_tiled(chip("trn1"), 128, 256, 512);
  ASSERT_TRUE(core::check_races(p, chip("trn1")).clean());
  // Drop the wait of the VectorE copy out of PSUM: it now races with the matmuls.
  auto& copy = p.stream(Engine::kVector).at(0);
  ASSERT_FALSE(copy.waits.empty());
  copy.waits.clear();
  const core::RaceReport r = core::check_races(p, chip("trn1"));
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings.front().kind, core::FindingKind::kReadAfterWrite)
      << core::format_race_report(r);
  EXPECT_EQ(r.findings.front().second.stream, Engine::kVector);
}

TEST(Sync, EveryExampleIsRaceFreeAndSemaphoresCountUp) {
  const arch::ChipSpec& spec = chip("trn2");
  const std::vector<isa::Program> progs{
      examples::matmul_fully_optimized(spec, 512, 512, 1024, {2, 1, 2}),
      examples::softmax(spec, 300, 64), examples::layernorm(spec, 256, 600),
      examples::rmsnorm(spec, 256, 64), examples::attention(spec, 256, 64, true)};
  for (const isa::Program& p : progs) {
    const core::RaceReport r = core::check_races(p, spec, {20000});
    EXPECT_TRUE(r.clean()) << core::format_race_report(r);
    EXPECT_LE(p.num_semaphores, isa::kMaxSemaphores);
    // Within a stream, the waits on one semaphore never go down (they are counts).
    for (isa::Engine e : isa::kAllEngines) {
      std::vector<int64_t> last(static_cast<size_t>(p.num_semaphores), 0);
      for (const auto& in : p.stream(e))
        for (const isa::SemWait& w : in.waits) {
          EXPECT_GT(w.value, last[w.sem]) << "a wait that the stream already satisfied";
          last[w.sem] = w.value;
        }
    }
  }
}

// A collective completes when its rank list has met (fabric/rank_group.h), not in order with
// the transfers of the DMA queue that issued it: a read of its dst from that same queue still
// waits for it, on a semaphore of the queue's peer completions.
TEST(Sync, ACollectiveIsNotOrderedByItsQueue) {
  KernelBuilder kb(chip("trn2"));
  auto src = kb.scratch("src", num::fp32(), {128, 64});
  auto dst = kb.scratch("dst", num::fp32(), {128, 64});
  auto out = kb.output("out", num::fp32(), {128, 64});
  const kernel::DmaOpts on_sync{Engine::kSync, false};
  kb.collective(dst, src, {isa::CollectiveKind::kAllReduce}, on_sync);
  kb.dma_copy(out, dst, on_sync);
  const isa::Program p = kb.build();
  const auto& read = at(p, Engine::kSync, 1);
  ASSERT_EQ(at(p, Engine::kSync, 0).op, isa::Opcode::kCollective);
  ASSERT_EQ(at(p, Engine::kSync, 0).p.dma_queue, read.p.dma_queue);  // one queue
  ASSERT_EQ(read.waits.size(), 1u);
  ASSERT_EQ(at(p, Engine::kSync, 0).signals.size(), 1u);
  EXPECT_EQ(read.waits[0].sem, at(p, Engine::kSync, 0).signals[0].sem);
}

}  // namespace
}  // namespace trnsim::kernel_test
