// Profiles of several cores (chip/chip_profile.h): keeping each core's dependency graph in a
// chip run changes no time; a core's critical path stays within the core, whole, and marks
// what another core released (PathEdge::kPeer); the chip's figures are its cores' against
// closed forms.
#include "chip/chip_profile.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "arch/arch.h"
#include "chip/chip_profile_report.h"
#include "chip/chip_run.h"
#include "core/timing/core_timing.h"
#include "isa/assembler.h"

namespace trnsim::chip {
namespace {

using core::PathEdge;

const arch::ChipSpec& trn2() {
  static const arch::ChipSpec c = arch::load_chip("trn2");
  return c;
}

uint64_t peer_edges(const core::CoreProfile& c) {
  return c.path.edges[static_cast<size_t>(PathEdge::kPeer)];
}

// Core 0 reaches its barrier at once and VectorE then waits for the barrier's signal; core 1
// reaches it only after a long VectorE op. Core 0's barrier waits for core 1.
std::vector<isa::Program> barrier_pair() {
  return {isa::assemble(R"(.chip trn2
.semaphores 1
.engine pool
  core_barrier signal=s0+1
.engine dve
  memset sbuf[0:128] [[1,64]] fp32 value=1 wait=s0>=1
)"),
          isa::assemble(R"(.chip trn2
.semaphores 1
.engine dve
  memset sbuf[0:128] [[1,8192]] fp32 value=1 signal=s0+1
.engine pool
  core_barrier wait=s0>=1
)")};
}

// Each core fills a tile, trades it for the peer's with sendrecv and stores what came: the
// store waits on the sendrecv's completion.
std::vector<isa::Program> exchange_pair() {
  std::vector<isa::Program> out;
  for (int core = 0; core < 2; ++core)
    out.push_back(isa::assemble(fmt::format(R"(.chip trn2
.semaphores 2
.tensor out hbm fp32 [128, 512] output
.engine dve
  memset sbuf[0:128] [[1,512]] fp32 value={} signal=s0+1
.engine pool
  sendrecv sbuf[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] fp32 send_to={} recv_from={} wait=s0>=1 signal=s1+1
  dma_copy out[0:128] [[1,512]] <- sbuf[0:128]+2048 [[1,512]] fp32 wait=s1>=1
)",
                                            core + 1, 1 - core, 1 - core)));
  return out;
}

std::vector<const isa::Program*> pointers(const std::vector<isa::Program>& programs) {
  std::vector<const isa::Program*> out;
  for (const isa::Program& p : programs) out.push_back(&p);
  return out;
}

TEST(ChipProfile, KeepingEachCoresGraphChangesNoTime) {
  for (const std::vector<isa::Program>& programs : {barrier_pair(), exchange_pair()}) {
    ChipRunner plain(trn2(), pointers(programs), 2, core::RunMode::kTimingOnly);
    ChipRunner followed(trn2(), pointers(programs), 2, core::RunMode::kTimingOnly);
    std::vector<profile::DependencyGraph> graphs;
    const ChipResult a = plain.run();
    const ChipResult b = followed.run(nullptr, &graphs);
    ASSERT_TRUE(a.ok()) << a.faults_text();
    ASSERT_EQ(graphs.size(), 2u);
    EXPECT_EQ(a.total, b.total);
    for (size_t c = 0; c < 2; ++c) {
      EXPECT_GT(graphs[c].size(), 0u) << c;
      const core::TimingResult &x = a.cores[c], &y = b.cores[c];
      EXPECT_EQ(x.total, y.total) << c;
      EXPECT_EQ(x.dma.finish, y.dma.finish) << c;
      for (size_t e = 0; e < x.engines.size(); ++e) {
        EXPECT_EQ(x.engines[e].busy, y.engines[e].busy) << c << " " << e;
        EXPECT_EQ(x.engines[e].finish, y.engines[e].finish) << c << " " << e;
        EXPECT_EQ(x.engines[e].stall, y.engines[e].stall) << c << " " << e;
      }
    }
  }
}

// Each core's path covers its own run: its shares add up to the core's end.
void expect_whole(const ChipProfile& p) {
  for (size_t c = 0; c < p.cores.size(); ++c) {
    const core::CoreProfile& cp = p.cores[c];
    Picoseconds sum;
    for (Picoseconds t : cp.path.per_lane) sum += t;
    EXPECT_EQ(sum, cp.path.time) << "core " << c;
    EXPECT_EQ(cp.path.time, cp.result.total) << "core " << c;
  }
}

TEST(ChipProfile, AWaitOnABarrierTheOtherCoreHeldIsReleasedByThePeer) {
  const ChipProfile p = profile_chip(trn2(), barrier_pair(), 2);
  ASSERT_TRUE(p.ok());
  expect_whole(p);
  // Core 0's VectorE op waits for the barrier's signal, which waited for core 1.
  EXPECT_EQ(peer_edges(p.cores[0]), 1u);
  EXPECT_EQ(p.cores[0].path.length, 2u);  // the barrier, then the memset it released
  // Core 1 arrives last: its barrier passes on arrival, nothing waits on core 0.
  EXPECT_EQ(peer_edges(p.cores[1]), 0u);
  // The barrier holds core 0's path until it passes: after core 1's arrival.
  const Picoseconds pool = p.cores[0].path.per_lane[static_cast<size_t>(isa::Engine::kGpSimd)];
  EXPECT_GE(pool, p.cores[1].result.engines[static_cast<size_t>(isa::Engine::kGpSimd)].finish);
  EXPECT_EQ(p.slowest, 0);
  EXPECT_EQ(p.total, p.cores[0].result.total);
  EXPECT_EQ(p.bound, p.cores[0].roofline.verdict);
}

TEST(ChipProfile, AWaitOnASendRecvIsReleasedByThePeer) {
  const ChipProfile p = profile_chip(trn2(), exchange_pair(), 2);
  ASSERT_TRUE(p.ok());
  expect_whole(p);
  for (size_t c = 0; c < 2; ++c) {
    EXPECT_EQ(peer_edges(p.cores[c]), 1u) << c;  // the store's trigger
    // The path runs through the sendrecv, which owns the exchange's time.
    bool sendrecv = false;
    for (const core::PathItem& it : p.cores[c].path.top)
      sendrecv = sendrecv || it.name.starts_with("sendrecv");
    EXPECT_TRUE(sendrecv) << c;
  }
  EXPECT_EQ(p.total, std::max(p.cores[0].result.total, p.cores[1].result.total));
}

// One 8 MiB load per core on every core of a trn2 (4 stacks of 2 cores): each stack moves its
// two cores' bytes, the chip all of them, over the chip's time.
TEST(ChipProfile, HbmTrafficIsSummedPerStackAndForTheChip) {
  constexpr double kBytes = 128.0 * 16384 * 4;
  const isa::Program load = isa::assemble(R"(.chip trn2
.tensor X hbm fp32 [128, 16384] input
.engine sp
  dma_copy sbuf[0:128] [[1,16384]] fp32 <- X[0:128] [[1,16384]]
)");
  const std::vector<isa::Program> programs(8, load);
  const ChipProfile p = profile_chip(trn2(), programs, 1);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p.cores.size(), 8u);
  ASSERT_EQ(p.stacks.size(), 4u);
  Picoseconds slowest;
  for (const core::CoreProfile& c : p.cores) slowest = std::max(slowest, c.result.total);
  EXPECT_EQ(p.total, slowest);
  const double seconds = static_cast<double>(p.total.v) * 1e-12;
  for (int s = 0; s < 4; ++s) {
    const StackTraffic& st = p.stacks[static_cast<size_t>(s)];
    EXPECT_EQ(st.stack, s);
    EXPECT_EQ(st.cores, (std::vector<int>{2 * s, 2 * s + 1}));
    EXPECT_DOUBLE_EQ(st.hbm_bytes, 2 * kBytes);
    EXPECT_DOUBLE_EQ(st.bytes_per_s, 2 * kBytes / seconds);
    EXPECT_DOUBLE_EQ(st.peak_bytes_per_s, static_cast<double>(core::hbm_stack_bandwidth(trn2())));
  }
  EXPECT_DOUBLE_EQ(p.hbm_bytes, 8 * kBytes);
  EXPECT_DOUBLE_EQ(p.hbm_bytes_per_s, 8 * kBytes / seconds);
  EXPECT_DOUBLE_EQ(p.hbm_peak_bytes_per_s, trn2().chip.hbm.bandwidth_gbps * 1e9);
  EXPECT_EQ(p.mfu, 0.0);  // no matmul

  const nlohmann::json j = chip_profile_json(p);
  EXPECT_EQ(j["chip"]["cores"], 8);
  EXPECT_EQ(j["chip"]["lnc"], 1);
  EXPECT_EQ(j["chip"]["logical_cores"], 8);
  EXPECT_EQ(j["chip"]["stacks"].size(), 4u);
  EXPECT_EQ(j["chip"]["per_core"].size(), 8u);
  EXPECT_EQ(j["cores"].size(), 8u);
  EXPECT_EQ(j["chip"]["total_ps"], p.total.v);
  const std::string text = chip_profile_text(p);
  EXPECT_NE(text.find("8 physical cores in 8 logical cores of LNC=1"), std::string::npos) << text;
  EXPECT_NE(text.find("stack 3 (cores 6, 7)"), std::string::npos) << text;
  EXPECT_NE(text.find("== core 7 (logical core 7, rank 0, HBM stack 3) =="), std::string::npos)
      << text;
}

}  // namespace
}  // namespace trnsim::chip
