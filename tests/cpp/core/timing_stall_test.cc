// Where an engine's time goes (EngineStats::stall, timing_sequencer.h): waits on another
// engine's semaphore (and which engine), on a DMA, on the engine's own earlier instruction;
// busy + stalls + idle is the run; and the bound verdict.
#include <gtest/gtest.h>

#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"
#include "sim/clock.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

isa::Instruction vec_op(int64_t n, int64_t offset = 0) {
  return unary(Opcode::kTensorScalar, Engine::kVector, sbuf(128, n, num::fp32(), offset),
               sbuf(128, n, num::fp32(), offset));
}
isa::Instruction act_op(int64_t n) {
  return unary(Opcode::kActivation, Engine::kScalar, sbuf(128, n, num::fp32(), 1 << 16),
               sbuf(128, n, num::fp32(), 1 << 16));
}

const EngineStats& stats(const TimingResult& r, Engine e) {
  return r.engines[static_cast<size_t>(e)];
}
Picoseconds stall(const TimingResult& r, Engine e, Stall s) {
  return stats(r, e).stall[static_cast<size_t>(s)];
}

// Every engine's busy time, stalls and idle time add up to the run, none negative.
void expect_accounted(const TimingResult& r) {
  for (Engine e : isa::kAllEngines) {
    const EngineStats& s = stats(r, e);
    Picoseconds used = s.busy;
    for (Picoseconds t : s.stall) {
      EXPECT_GE(t.v, 0);
      used += t;
    }
    EXPECT_LE(used, r.total) << isa::engine_name(e);
    EXPECT_EQ(used + s.idle(r.total), r.total) << isa::engine_name(e);
  }
}

// ScalarE waits for VectorE's signal: from its start until VectorE's op retires (N + 100 DVE
// cycles), all of it on VectorE.
TEST(TimingStall, ASemaphoreWaitIsChargedToItsSignallingEngine) {
  const int64_t n = 4000;
  isa::Program p;
  p.append(with_signal(vec_op(n), 0));
  p.append(with_wait(act_op(10), 0, 1));
  const TimingResult r = run_timing(chip("trn3"), p);
  ASSERT_TRUE(r.ok()) << r.faults.to_string();
  const sim::Clock dve = sim::Clock::from_ghz(chip("trn3").core.vector.clock_ghz);
  const Picoseconds waited = stall(r, Engine::kScalar, Stall::kSemaphore);
  EXPECT_EQ(waited, dve.cycles_to_ps(static_cast<uint64_t>(n) + 100));
  EXPECT_EQ(stats(r, Engine::kScalar).waited_on[static_cast<size_t>(Engine::kVector)], waited);
  EXPECT_EQ(stall(r, Engine::kScalar, Stall::kDma).v, 0);
  EXPECT_EQ(stall(r, Engine::kVector, Stall::kSemaphore).v, 0);
  expect_accounted(r);
}

// A VectorE op waiting for a DMA's completion signal waits on "dma".
TEST(TimingStall, AWaitForATransferIsADmaStall) {
  isa::Program p;
  p.append(with_signal(dma_copy(sbuf(128, 2048, num::fp32()), hbm(128, 2048, num::fp32())), 0));
  p.append(with_wait(vec_op(2048), 0, 1));
  const TimingResult r = run_timing(chip("trn2"), p);
  ASSERT_TRUE(r.ok()) << r.faults.to_string();
  EXPECT_GT(stall(r, Engine::kVector, Stall::kDma).v, 0);
  EXPECT_EQ(stall(r, Engine::kVector, Stall::kSemaphore).v, 0);
  // It waited until the transfer's signal: from its start to the DMA's finish (and VectorE's
  // next clock edge).
  EXPECT_LE(stall(r, Engine::kVector, Stall::kDma), r.dma.finish + Picoseconds(2000));
  EXPECT_GT(stall(r, Engine::kVector, Stall::kDma).v, r.dma.finish.v / 2);
  expect_accounted(r);
}

// In-place VectorE ops, each reading what the one before wrote: each waits for the previous
// one's retirement (its latency beyond its initiation interval), a stall on itself.
TEST(TimingStall, ADependentChainStallsOnItsOwnEngine) {
  isa::Program dep, indep;
  for (int i = 0; i < 8; ++i) {
    dep.append(vec_op(64));
    indep.append(vec_op(64, int64_t{i} * 1024));  // disjoint: no dependency
  }
  const TimingResult rd = run_timing(chip("trn2"), dep);
  const TimingResult ri = run_timing(chip("trn2"), indep);
  ASSERT_TRUE(rd.ok() && ri.ok());
  EXPECT_GT(stall(rd, Engine::kVector, Stall::kOwn).v, 0);
  EXPECT_EQ(stall(ri, Engine::kVector, Stall::kOwn).v, 0);
  // The same work (up to picosecond rounding of the clock edges).
  EXPECT_NEAR(static_cast<double>(stats(rd, Engine::kVector).busy.v),
              static_cast<double>(stats(ri, Engine::kVector).busy.v), 16);
  expect_accounted(rd);
  expect_accounted(ri);
  // The independent ops keep VectorE busy: it bounds the run; the dependent chain waits on
  // its own latency more than it works.
  EXPECT_EQ(run_timing(chip("trn2"),
                       [] {
                         isa::Program p;
                         for (int i = 0; i < 16; ++i)
                           p.append(vec_op(8192, int64_t{i % 2} * 65536));
                         return p;
                       }())
                .bound()
                .verdict,
            "dve");
  EXPECT_EQ(rd.bound().verdict, "latency");
}

}  // namespace
}  // namespace trnsim::core
