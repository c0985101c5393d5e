// The critical path (timing_path.h, profile/critical_path.h) of hand-built programs whose path
// is known, and the promise that following it changes no time.
#include "core/timing/timing_path.h"

#include <gtest/gtest.h>

#include "core/timing/timing_profile.h"
#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

struct Followed {
  TimingResult result;
  profile::DependencyGraph graph;
  profile::CriticalPath path;
};

Followed follow(const arch::ChipSpec& c, const isa::Program& p, TimingOptions o = {}) {
  Followed f;
  o.path = &f.graph;
  f.result = run_timing(c, p, o);
  f.path = profile::critical_path(f.graph, kNumPathLanes, kNumPathEdges, 100);
  return f;
}

// The path's nodes' lanes, first to last, with runs of one lane as one entry.
std::vector<int> lane_runs(const Followed& f) {
  std::vector<int> out;
  for (uint32_t n : f.path.nodes) {
    const int lane = f.graph[n].lane;
    if (out.empty() || out.back() != lane) out.push_back(lane);
  }
  return out;
}

Picoseconds lane_time(const Followed& f, int lane) {
  return f.path.per_lane[static_cast<size_t>(lane)];
}

void expect_whole(const Followed& f) {
  Picoseconds sum;
  for (Picoseconds t : f.path.per_lane) sum += t;
  EXPECT_EQ(sum, f.path.time);
  EXPECT_EQ(f.path.time, f.result.total);
}

constexpr int kPe = static_cast<int>(Engine::kTensor);
constexpr int kDve = static_cast<int>(Engine::kVector);
constexpr int kAct = static_cast<int>(Engine::kScalar);
constexpr int kSp = static_cast<int>(Engine::kSync);

// Load -> matmul -> PSUM copy -> store, each waiting on the one before through a semaphore:
// the path is the load's trigger and transfer, TensorE's two instructions, VectorE's copy, the
// store's trigger and transfer, in that order.
isa::Program dma_matmul_copy_dma() {
  isa::Program p;
  p.append(with_signal(dma_copy(sbuf(128, 512), hbm(128, 512, num::bf16())), 0));
  p.append(with_wait(load_stationary(sbuf(128, 128)), 0, 1));
  p.append(with_signal(matmul(psum(128, 512), sbuf(128, 512)), 1));
  p.append(with_signal(with_wait(unary(Opcode::kTensorCopy, Engine::kVector,
                                       sbuf(128, 512, num::fp32(), 1 << 14), psum(128, 512)),
                                 1, 1),
                       2));
  p.append(with_wait(
      dma_copy(hbm(128, 512, num::fp32(), 1 << 20), sbuf(128, 512, num::fp32(), 1 << 14)), 2, 1));
  return p;
}

TEST(TimingPath, ALoadMatmulCopyStoreChainIsThePath) {
  for (const char* name : {"trn1", "trn2", "trn3"}) {
    const Followed f = follow(chip(name), dma_matmul_copy_dma());
    ASSERT_TRUE(f.result.ok()) << f.result.faults.to_string();
    EXPECT_EQ(lane_runs(f), (std::vector<int>{kSp, kDmaLane, kPe, kDve, kSp, kDmaLane})) << name;
    EXPECT_EQ(f.path.length, 7u) << name;  // 2 triggers, 2 transfers, 2 on TensorE, 1 copy
    // How each was released: the start, the trigger, the load's signal, the stationary, the
    // matmul's signal, the copy's signal, the trigger.
    std::vector<PathEdge> edges;
    for (uint32_t n : f.path.nodes) edges.push_back(static_cast<PathEdge>(f.graph[n].edge));
    EXPECT_EQ(edges, (std::vector<PathEdge>{PathEdge::kStart, PathEdge::kTrigger, PathEdge::kDma,
                                            PathEdge::kUnit, PathEdge::kSemaphore,
                                            PathEdge::kSemaphore, PathEdge::kTrigger}))
        << name;
    expect_whole(f);
    // The transfers take most of it (each pays the DMA's fixed latency).
    EXPECT_GT(lane_time(f, kDmaLane).v, f.result.total.v / 2) << name;
    EXPECT_GT(lane_time(f, kPe).v, 0) << name;
    EXPECT_GT(lane_time(f, kDve).v, 0) << name;
  }
}

// Two independent chains of dependent ops: the longer one is the path, whichever engine runs
// it.
TEST(TimingPath, OfTwoIndependentChainsTheLongerIsThePath) {
  auto chains = [](int64_t dve_n, int64_t act_n) {
    isa::Program p;
    for (int i = 0; i < 4; ++i) {
      p.append(unary(Opcode::kTensorScalar, Engine::kVector, sbuf(128, dve_n, num::fp32()),
                     sbuf(128, dve_n, num::fp32())));
      p.append(unary(Opcode::kActivation, Engine::kScalar, sbuf(128, act_n, num::fp32(), 1 << 16),
                     sbuf(128, act_n, num::fp32(), 1 << 16)));
    }
    return p;
  };
  const Followed dve = follow(chip("trn2"), chains(4000, 100));
  ASSERT_TRUE(dve.result.ok());
  EXPECT_EQ(lane_runs(dve), std::vector<int>{kDve});
  EXPECT_EQ(dve.path.length, 4u);
  EXPECT_EQ(lane_time(dve, kDve), dve.result.total);
  expect_whole(dve);
  // Each op reads what the one before wrote: released by its result.
  for (size_t i = 1; i < dve.path.nodes.size(); ++i)
    EXPECT_EQ(static_cast<PathEdge>(dve.graph[dve.path.nodes[i]].edge), PathEdge::kResult);

  const Followed act = follow(chip("trn2"), chains(100, 4000));
  ASSERT_TRUE(act.result.ok());
  EXPECT_EQ(lane_runs(act), std::vector<int>{kAct});
  EXPECT_EQ(act.path.length, 4u);
  expect_whole(act);
}

// Back-to-back independent matmuls: TensorE's unit is the constraint, the path is every one.
TEST(TimingPath, AThroughputBoundStreamIsItsOwnPath) {
  isa::Program p;
  p.append(load_stationary(sbuf(128, 128)));
  for (int i = 0; i < 50; ++i) p.append(matmul(psum(128, 512), sbuf(128, 512)));
  const Followed f = follow(chip("trn2"), p);
  ASSERT_TRUE(f.result.ok());
  EXPECT_EQ(f.path.length, 51u);
  EXPECT_EQ(lane_time(f, kPe), f.result.total);
  EXPECT_EQ(f.path.edges[static_cast<size_t>(PathEdge::kUnit)], 50u);
  EXPECT_EQ(f.path.top.size(), 51u);  // per label: each static instruction
  expect_whole(f);
  // The profile lists instructions by name: the 50 matmuls are one item.
  const CoreProfile prof = profile_program(chip("trn2"), p);
  ASSERT_EQ(prof.path.top.size(), 2u);
  EXPECT_EQ(prof.path.top[0].name, "multiply_moving");
  EXPECT_EQ(prof.path.top[0].count, 50u);
  EXPECT_EQ(prof.path.top[0].statics, 50u);
  EXPECT_EQ(prof.path.top[1].name, "load_stationary");
}

// Following the path reads times, never sets them: every figure of a run is the same with and
// without it, with the DMA engines folded or not and signals deferred or not.
TEST(TimingPath, FollowingThePathChangesNoTime) {
  isa::Program tiles;
  for (int i = 0; i < 12; ++i) {
    const auto sem = static_cast<uint16_t>(i % 3);
    tiles.append(with_signal(dma_copy(sbuf(128, 1024, num::bf16(), (i % 4) * 4096),
                                      hbm(128, 1024, num::bf16(), i * (1 << 20)),
                                      i % 2 ? Engine::kScalar : Engine::kSync, i % 4),
                             sem));
    tiles.append(
        with_wait(unary(Opcode::kTensorCopy, Engine::kVector, sbuf(128, 1024, num::fp32(), 1 << 16),
                        sbuf(128, 1024, num::bf16(), (i % 4) * 4096)),
                  sem, i / 3 + 1));
  }
  for (const char* name : {"trn1", "trn2", "trn3"}) {
    for (bool fold : {true, false}) {
      for (bool defer : {true, false}) {
        TimingOptions o;
        o.fold_dma_engines = fold;
        o.defer_signals = defer;
        const TimingResult plain = run_timing(chip(name), tiles, o);
        const Followed f = follow(chip(name), tiles, o);
        ASSERT_TRUE(plain.ok()) << plain.faults.to_string();
        EXPECT_EQ(f.result.total, plain.total) << name;
        EXPECT_EQ(f.result.events, plain.events) << name;
        EXPECT_EQ(f.result.dma.finish, plain.dma.finish);
        EXPECT_EQ(f.result.dma.engine_busy, plain.dma.engine_busy);
        for (Engine e : isa::kAllEngines) {
          const auto& a = f.result.engines[static_cast<size_t>(e)];
          const auto& b = plain.engines[static_cast<size_t>(e)];
          EXPECT_EQ(a.busy, b.busy);
          EXPECT_EQ(a.finish, b.finish);
          EXPECT_EQ(a.stall, b.stall);
          EXPECT_EQ(a.active, b.active);
        }
        expect_whole(f);
      }
    }
  }
  // The load chain above too.
  const TimingResult plain = run_timing(chip("trn2"), dma_matmul_copy_dma());
  EXPECT_EQ(follow(chip("trn2"), dma_matmul_copy_dma()).result.total, plain.total);
}

// A DMA-bound run: transfers queued behind each other on the DMA engines lead the path
// through the queue.
TEST(TimingPath, TransfersQueuedBehindEachOtherChainThroughTheQueue) {
  isa::Program p;
  for (int i = 0; i < 16; ++i)
    p.append(dma_copy(sbuf(128, 8192, num::fp32()), hbm(128, 8192, num::fp32(), i * (1 << 23))));
  const Followed f = follow(chip("trn2"), p);
  ASSERT_TRUE(f.result.ok());
  EXPECT_GT(f.path.edges[static_cast<size_t>(PathEdge::kQueue)], 10u);
  EXPECT_GT(lane_time(f, kDmaLane).v, f.result.total.v * 9 / 10);
  expect_whole(f);
}

// The profile of the load chain: named items, classes, roofline.
TEST(TimingPath, TheProfileNamesThePathAndCountsTheWork) {
  const CoreProfile p = profile_program(chip("trn2"), dma_matmul_copy_dma());
  ASSERT_TRUE(p.result.ok());
  EXPECT_EQ(p.path.length, 7u);
  EXPECT_EQ(p.path.time, p.result.total);
  ASSERT_FALSE(p.path.top.empty());
  EXPECT_TRUE(p.path.top.front().transfer);  // a transfer's fixed latency is the longest item
  EXPECT_EQ(p.path.top.front().name, "dma_copy");
  double flops = 0;
  int64_t hbm = 0;
  for (const InstructionClass& c : p.classes) {
    flops += c.flops;
    hbm += c.hbm_bytes;
  }
  EXPECT_DOUBLE_EQ(flops, 2.0 * 128 * 128 * 512);
  EXPECT_EQ(hbm, 128 * 512 * 2 + 128 * 512 * 4);
  EXPECT_DOUBLE_EQ(p.roofline.flops, flops);
  EXPECT_NEAR(p.roofline.mfu, p.result.tensor_utilisation(), 1e-12);
  EXPECT_EQ(p.roofline.verdict, "latency");  // a chain of dependencies, nothing busy
}

}  // namespace
}  // namespace trnsim::core
