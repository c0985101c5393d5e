// The physical cores of a logical core on one simulator (chip/spmd_run.h): core_barrier and
// sendrecv between them, the HBM stack they share, and the faults of programs that do not meet.
// Expected times are derived from single-core runs of the same programs (run_timing), so each
// test checks the mechanism the group adds and nothing else.
#include "chip/spmd_run.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "arch/arch.h"
#include "base/error.h"
#include "chip/lnc.h"
#include "core/timing/timing_run.h"
#include "isa/assembler.h"

namespace trnsim::chip {
namespace {

const arch::ChipSpec& trn2() {
  static const arch::ChipSpec c = arch::load_chip("trn2");
  return c;
}

int64_t remote_ps(const arch::ChipSpec& c) {
  return std::llround(c.chip.lnc.remote_semaphore_ns * 1e3);
}

SpmdResult run_pair(const arch::ChipSpec& c, const isa::Program& a, const isa::Program& b,
                    core::RunMode mode = core::RunMode::kTimingOnly) {
  SpmdRunner r(c, {&a, &b}, mode);
  return r.run();
}

Picoseconds pool_finish(const core::TimingResult& r) {
  return r.engines[static_cast<size_t>(isa::Engine::kGpSimd)].finish;
}

// Core 0 reaches its barrier at once; core 1 only after a long VectorE op. Each passes when it
// has heard from the other: core 0 at core 1's arrival + the remote semaphore latency, core 1
// at max(its own arrival, core 0's arrival + that latency).
TEST(CoreBarrier, EachCorePassesWhenTheOthersSemaphoreArrives) {
  const isa::Program early = isa::assemble(R"(.chip trn2
.engine pool
  core_barrier
)");
  const isa::Program late = isa::assemble(R"(.chip trn2
.semaphores 1
.engine dve
  memset sbuf[0:128] [[1,8192]] fp32 value=1 signal=s0+1
.engine pool
  core_barrier wait=s0>=1
)");
  // Alone (a group of one), a barrier passes on arrival: these are the arrival times.
  const Picoseconds t0 = pool_finish(core::run_timing(trn2(), early));
  const Picoseconds t1 = pool_finish(core::run_timing(trn2(), late));
  ASSERT_GT(t1.v, t0.v + remote_ps(trn2()));  // core 1 is the late one
  const SpmdResult r = run_pair(trn2(), early, late);
  ASSERT_TRUE(r.ok()) << r.faults_text();
  EXPECT_EQ(pool_finish(r.cores[0]).v, t1.v + remote_ps(trn2()));
  EXPECT_EQ(pool_finish(r.cores[1]).v, std::max(t1.v, t0.v + remote_ps(trn2())));
  EXPECT_EQ(r.total.v, t1.v + remote_ps(trn2()));
}

TEST(CoreBarrier, BarriersMeetInOrderAndSignalWhenTheyPass) {
  // Two barriers each; the VectorE op after the second waits for it.
  const std::string text = R"(.chip trn2
.semaphores 1
.engine pool
  core_barrier
  core_barrier signal=s0+1
.engine dve
  memset sbuf[0:128] [[1,64]] fp32 value=1 wait=s0>=1
)";
  const isa::Program p = isa::assemble(text);
  const SpmdResult r = run_pair(trn2(), p, p);
  ASSERT_TRUE(r.ok()) << r.faults_text();
  const Picoseconds alone = core::run_timing(trn2(), p).total;
  // Two rounds of semaphore latency on top of the single-core time.
  EXPECT_GE(r.total.v, alone.v + 2 * remote_ps(trn2()));
  EXPECT_EQ(r.cores[0].total, r.cores[1].total);
}

TEST(CoreBarrier, ABarrierTheOtherCoreNeverReachesIsADeadlock) {
  const isa::Program waits = isa::assemble(".chip trn2\n.engine pool\n  core_barrier\n");
  const isa::Program none =
      isa::assemble(".chip trn2\n.engine dve\n  memset sbuf[0:128] [[1,64]] fp32 value=1\n");
  const SpmdResult r = run_pair(trn2(), waits, none);
  ASSERT_EQ(r.cores[0].faults.size(), 1u) << r.faults_text();
  EXPECT_EQ(r.cores[0].faults[0].kind, mem::FaultKind::kDeadlock);
  EXPECT_NE(r.cores[0].faults[0].instruction.find("core_barrier"), std::string::npos);
  EXPECT_TRUE(r.cores[1].ok());
}

// Each core fills its src with its own value, trades it for the peer's and stores what came.
std::string exchange_program(int core, float value, const char* dst_shape = "[[1,512]] fp32",
                             bool store = true) {
  const int peer = 1 - core;
  std::string text = fmt::format(R"(.chip trn2
.semaphores 2
.tensor out hbm fp32 [128, 512] output
.engine dve
  memset sbuf[0:128] [[1,512]] fp32 value={} signal=s0+1
.engine pool
  sendrecv sbuf[0:128]+2048 {} <- sbuf[0:128] [[1,512]] fp32 send_to={} recv_from={} wait=s0>=1 signal=s1+1
)",
                                 value, dst_shape, peer, peer);
  if (store)
    text += "  dma_copy out[0:128] [[1,512]] <- sbuf[0:128]+2048 [[1,512]] fp32 wait=s1>=1\n";
  return text;
}

TEST(SendRecv, TheCoresTradeTilesAndEachStoresThePeers) {
  const isa::Program a = isa::assemble(exchange_program(0, 1.5f));
  const isa::Program b = isa::assemble(exchange_program(1, -2.25f));
  // Both write "out": the shared HBM keeps whichever store ends last; run each store alone
  // by giving core 1 a program without the store is not needed: the stores write the same
  // bytes only if the exchange worked both ways, so check both orders through the values.
  SpmdRunner run(trn2(), {&a, &b}, core::RunMode::kFunctionalTiming);
  const SpmdResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  const std::vector<float> out = run.read_tensor_f32("out");
  // Core 0 stores -2.25 (from core 1), core 1 stores 1.5 (from core 0); the later store wins.
  const float expect = r.cores[0].dma.finish > r.cores[1].dma.finish ? -2.25f : 1.5f;
  for (float v : out) ASSERT_EQ(v, expect);
  EXPECT_EQ(r.cores[0].dma.hbm_read_bytes, 0u);  // SBUF to SBUF
}

TEST(SendRecv, BothDirectionsArriveIntact) {
  // Core 1 only receives into its dst and stores it; core 0 only sends. Each sendrecv both
  // sends and receives, so core 1 sends too, into core 0's dst.
  const isa::Program a = isa::assemble(exchange_program(0, 0.75f));
  const std::string b_text = R"(.chip trn2
.semaphores 2
.tensor out hbm fp32 [128, 512] output
.engine dve
  memset sbuf[0:128] [[1,512]] fp32 value=3 signal=s0+1
.engine pool
  sendrecv sbuf[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] fp32 send_to=0 recv_from=0 wait=s0>=1 signal=s1+1
)";
  const isa::Program b = isa::assemble(b_text);
  SpmdRunner run(trn2(), {&a, &b}, core::RunMode::kFunctionalTiming);
  const SpmdResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  for (float v : run.read_tensor_f32("out")) ASSERT_EQ(v, 3.0f);  // core 0 stored core 1's
}

// A sendrecv moves its bytes like an SBUF-to-SBUF dma_copy of the same operands on the same
// queue: with both sides issued together, each core's transfer ends when that copy would.
// (Without the stores to HBM, whose bandwidth the two cores would share.)
TEST(SendRecv, TakesTheTimeOfTheEquivalentOnChipCopy) {
  const char* shape = "[[1,512]] fp32";
  const isa::Program a = isa::assemble(exchange_program(0, 1.0f, shape, false));
  const isa::Program b = isa::assemble(exchange_program(1, 2.0f, shape, false));
  std::string copy_text = exchange_program(0, 1.0f, shape, false);
  const std::string from =
      "sendrecv sbuf[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] "
      "fp32 send_to=1 recv_from=1";
  const size_t at = copy_text.find(from);
  ASSERT_NE(at, std::string::npos);
  copy_text.replace(at, from.size(),
                    "dma_copy sbuf[0:128]+2048 [[1,512]] fp32 <- sbuf[0:128] [[1,512]] fp32");
  const core::TimingResult alone = core::run_timing(trn2(), isa::assemble(copy_text));
  ASSERT_TRUE(alone.ok()) << alone.faults.to_string();
  const SpmdResult r = run_pair(trn2(), a, b);
  ASSERT_TRUE(r.ok()) << r.faults_text();
  EXPECT_EQ(r.cores[0].total, alone.total);
  EXPECT_EQ(r.cores[1].total, alone.total);
}

TEST(SendRecv, MismatchedShapesAreFaultsOfBothCores) {
  const isa::Program a = isa::assemble(exchange_program(0, 1.0f));
  const isa::Program b = isa::assemble(exchange_program(1, 1.0f, "[[1,256]] fp32"));
  const SpmdResult r = run_pair(trn2(), a, b);
  ASSERT_FALSE(r.ok());
  for (int c = 0; c < 2; ++c) {
    ASSERT_FALSE(r.cores[static_cast<size_t>(c)].faults.empty()) << c;
    EXPECT_EQ(r.cores[static_cast<size_t>(c)].faults[0].kind, mem::FaultKind::kPeer);
  }
}

TEST(SendRecv, AnUnmatchedSendRecvIsAPeerFault) {
  const isa::Program a = isa::assemble(exchange_program(0, 1.0f));
  const isa::Program b = isa::assemble(".chip trn2\n.tensor out hbm fp32 [128, 512] output\n");
  const SpmdResult r = run_pair(trn2(), a, b);
  bool peer = false;
  for (const mem::Fault& f : r.cores[0].faults) peer = peer || f.kind == mem::FaultKind::kPeer;
  EXPECT_TRUE(peer) << r.faults_text();
  // Alone, with no peer at all, the same program faults at the sendrecv.
  const core::TimingResult alone = core::run_timing(trn2(), a);
  ASSERT_FALSE(alone.faults.empty());
  EXPECT_EQ(alone.faults[0].kind, mem::FaultKind::kPeer);
}

TEST(SendRecv, APeerOutsideTheLogicalCoreIsAFault) {
  std::string text = exchange_program(0, 1.0f);
  text.replace(text.find("send_to=1"), 9, "send_to=5");
  const isa::Program a = isa::assemble(text);
  const isa::Program b = isa::assemble(exchange_program(1, 1.0f));
  const SpmdResult r = run_pair(trn2(), a, b);
  ASSERT_FALSE(r.cores[0].faults.empty());
  EXPECT_EQ(r.cores[0].faults[0].kind, mem::FaultKind::kPeer);
  EXPECT_NE(r.cores[0].faults[0].message.find("send_to=5"), std::string::npos);
}

// Two cores loading from HBM at once share their stack's bandwidth (core/dma/hbm_pool.h). With a
// what-if stack slower than one core's 16 DMA engines, each core alone streams at the stack's
// rate and together at half of it.
TEST(HbmStack, TwoCoresShareTheStacksBandwidth) {
  // 200 GB/s a stack; no descriptor time, which would run at the shared rate too.
  const arch::ChipSpec slow =
      arch::load_chip("trn2", {arch::parse_override("chip.hbm.bandwidth_gbps=800"),
                               arch::parse_override("core.dma.descriptor_overhead_ns=0")});
  const isa::Program load = isa::assemble(R"(.chip trn2
.tensor X hbm fp32 [128, 8192] input
.engine sp
  dma_copy sbuf[0:128] [[1,8192]] fp32 <- X[0:128] [[1,8192]]
)");
  const core::TimingResult alone = core::run_timing(slow, load);
  const SpmdResult both = run_pair(slow, load, load);
  ASSERT_TRUE(alone.ok() && both.ok()) << both.faults_text();
  const int64_t start =
      alone.dma.finish.v -
      static_cast<int64_t>(std::llround(128.0 * 8192 * 4 * 1e12 / 200e9));  // overheads
  const double one = static_cast<double>(alone.dma.finish.v - start);
  const double two = static_cast<double>(both.cores[0].dma.finish.v - start);
  EXPECT_NEAR(two / one, 2.0, 1e-3);
  EXPECT_EQ(both.cores[0].dma.finish, both.cores[1].dma.finish);
  // The same program beside an idle core takes exactly its time alone.
  const isa::Program idle = isa::assemble(".chip trn2\n.tensor X hbm fp32 [128, 8192] input\n");
  EXPECT_EQ(run_pair(slow, load, idle).cores[0].total, alone.total);
}

TEST(SpmdRunner, RunsAreDeterministic) {
  const isa::Program a = isa::assemble(exchange_program(0, 1.0f));
  const isa::Program b = isa::assemble(exchange_program(1, 2.0f));
  const SpmdResult r1 = run_pair(trn2(), a, b), r2 = run_pair(trn2(), a, b);
  ASSERT_EQ(r1.cores.size(), r2.cores.size());
  for (size_t c = 0; c < r1.cores.size(); ++c) {
    EXPECT_EQ(r1.cores[c].total, r2.cores[c].total);
    EXPECT_EQ(r1.cores[c].events, r2.cores[c].events);
  }
}

TEST(SpmdRunner, RejectsMoreProgramsThanAStackHasCoresAndUnalikeTensors) {
  const isa::Program p = isa::assemble(".chip trn2\n.tensor X hbm fp32 [4, 4] input\n");
  const isa::Program q = isa::assemble(".chip trn2\n.tensor Y hbm fp32 [4, 4] input\n");
  EXPECT_THROW(SpmdRunner(trn2(), {&p, &p, &p}), InputError);
  EXPECT_THROW(SpmdRunner(trn2(), {&p, &q}), InputError);
}

TEST(Lnc, DegreesComeFromTheSpec) {
  EXPECT_EQ(lnc_degree(trn2(), std::nullopt), 2);  // the Trn2 default
  EXPECT_EQ(lnc_degree(trn2(), 1), 1);
  EXPECT_THROW(lnc_degree(trn2(), 4), InputError);
  const arch::ChipSpec trn1 = arch::load_chip("trn1");
  EXPECT_EQ(lnc_degree(trn1, std::nullopt), 1);
  try {
    lnc_degree(trn1, 2, "--lnc");
    FAIL() << "trn1 has no LNC=2";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--lnc");
    EXPECT_EQ(e.key(), "chip.lnc.degrees");
  }
  EXPECT_EQ(cores_per_stack(trn2()), 2);
  EXPECT_EQ(cores_per_stack(trn1), 1);
}

}  // namespace
}  // namespace trnsim::chip
