// Ranks of a kernel side by side (fabric/rank_run.h): collective instructions meet across the
// ranks of a replica group's list, take the time the fabric prices for them, and leave every
// rank's dst holding the result; mismatches and collectives that never meet are kPeer faults.
// Expected times come from the fabric's own price (Fabric::simulate) and single-rank runs of
// the same programs, so each test checks what the rank run adds.
#include "fabric/rank_run.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "arch/arch.h"
#include "base/error.h"
#include "core/timing/timing_run.h"
#include "isa/assembler.h"

namespace trnsim::fabric {
namespace {

const arch::ChipSpec& trn2() {
  static const arch::ChipSpec c = arch::load_chip("trn2");
  return c;
}

SystemSpec system() { return load_system("trn2.48xlarge"); }
RuntimeSpec runtime() { return load_runtime("neuron-2.28"); }

// Fills a [128, cols] fp32 src with `value`, runs the collective into dst, stores dst.
std::string program(float value, const std::string& collective, int cols = 512,
                    int dst_cols = 512) {
  return fmt::format(R"(.chip trn2
.semaphores 2
.tensor out hbm fp32 [128, {3}] output
.engine dve
  memset sbuf[0:128] [[1,{2}]] fp32 value={0} signal=s0+1
.engine pool
  collective sbuf[0:128]+8192 [[1,{3}]] fp32 <- sbuf[0:128] [[1,{2}]] fp32 {1} wait=s0>=1 signal=s1+1
  dma_copy out[0:128] [[1,{3}]] <- sbuf[0:128]+8192 [[1,{3}]] fp32 wait=s1>=1
)",
                     value, collective, cols, dst_cols);
}

std::vector<float> out_of(const RankRunner& r, int rank) {
  const std::vector<uint8_t> b = r.read_tensor(rank, "out");
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

Picoseconds fabric_price(Op op, int64_t ranks, int64_t bytes) {
  const Fabric f(system(), runtime(), Placement{RankUnit::kCore, ranks, 1, 0});
  CollectiveRequest req;
  req.op = op;
  req.bytes = bytes;
  req.placement = Placement{RankUnit::kCore, ranks, 1, 0};
  return f.simulate(req).device;
}

TEST(RankRun, AllReduceSumsEveryRanksTileInTheFabricsTime) {
  std::vector<isa::Program> ps;
  for (int r = 0; r < 4; ++r) ps.push_back(isa::assemble(program(r + 1.0f, "kind=all_reduce")));
  RankRunner run(trn2(), system(), runtime(), {&ps[0], &ps[1], &ps[2], &ps[3]}, {{{0, 1, 2, 3}}}, 1,
                 core::RunMode::kFunctionalTiming);
  const chip::ChipResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  for (int k = 0; k < 4; ++k)
    for (float v : out_of(run, k)) ASSERT_EQ(v, 10.0f);
  // The collective starts when the last rank arrives and lasts the fabric's price; the rest
  // is one rank's own work (memset, store), at most.
  const Picoseconds price = fabric_price(Op::kAllReduce, 4, 128 * 512 * 4);
  const Picoseconds alone =
      core::run_timing(trn2(), isa::assemble(program(1.0f, "kind=all_reduce"))).total;
  EXPECT_GT(price.v, 0);
  EXPECT_GE(r.total.v, price.v);
  EXPECT_LE(r.total.v, price.v + alone.v);
}

TEST(RankRun, MaxAndMinAreExactWhateverTheOrder) {
  for (const char* op : {"max", "min"}) {
    std::vector<isa::Program> ps;
    for (float v : {2.5f, -7.0f, 3.25f})
      ps.push_back(isa::assemble(program(v, fmt::format("kind=all_reduce reduce_op={}", op))));
    RankRunner run(trn2(), system(), runtime(), {&ps[0], &ps[1], &ps[2]}, {{{2, 0, 1}}}, 1,
                   core::RunMode::kFunctionalTiming);
    const chip::ChipResult r = run.run();
    ASSERT_TRUE(r.ok()) << r.faults_text();
    for (float v : out_of(run, 1)) ASSERT_EQ(v, std::string(op) == "max" ? 3.25f : -7.0f);
  }
}

TEST(RankRun, AllGatherConcatenatesAlongTheFreeDimInListOrder) {
  // [128, 64] per rank into [128, 128]: the collective dim is 1, so each of the 128 rows is a
  // block (outer = 128). The list is [1, 0]: rank 1's data comes first.
  std::vector<isa::Program> ps;
  for (float v : {5.0f, 9.0f})
    ps.push_back(isa::assemble(program(v, "kind=all_gather outer=128", 64, 128)));
  RankRunner run(trn2(), system(), runtime(), {&ps[0], &ps[1]}, {{{1, 0}}}, 1,
                 core::RunMode::kFunctionalTiming);
  const chip::ChipResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> out = out_of(run, k);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], i % 128 < 64 ? 9.0f : 5.0f) << i;
  }
}

TEST(RankRun, ListsOfOneCopyOnTheirOwnQueues) {
  std::vector<isa::Program> ps;
  for (float v : {1.0f, 2.0f}) ps.push_back(isa::assemble(program(v, "kind=all_reduce")));
  RankRunner run(trn2(), system(), runtime(), {&ps[0], &ps[1]}, {{{0}, {1}}}, 1,
                 core::RunMode::kFunctionalTiming);
  const chip::ChipResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  for (float v : out_of(run, 0)) ASSERT_EQ(v, 1.0f);
  for (float v : out_of(run, 1)) ASSERT_EQ(v, 2.0f);
}

TEST(RankRun, RanksThatDisagreeOnSizesFaultAndGoOn) {
  const isa::Program a = isa::assemble(program(1.0f, "kind=all_reduce", 512, 512));
  const isa::Program b = isa::assemble(program(1.0f, "kind=all_reduce", 256, 256));
  RankRunner run(trn2(), system(), runtime(), {&a, &b}, {{{0, 1}}}, 1,
                 core::RunMode::kFunctionalTiming);
  const chip::ChipResult r = run.run();
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(r.cores[static_cast<size_t>(k)].faults.size(), 1u) << r.faults_text();
    const mem::Fault& f = r.cores[static_cast<size_t>(k)].faults[0];
    EXPECT_EQ(f.kind, mem::FaultKind::kPeer);
    EXPECT_NE(f.message.find("src elements"), std::string::npos) << f.message;
  }
}

TEST(RankRun, ACollectiveTheOtherRankNeverIssuesIsReported) {
  const isa::Program a = isa::assemble(program(1.0f, "kind=all_reduce"));
  const isa::Program b =
      isa::assemble(".chip trn2\n.engine dve\n  memset sbuf[0:128] [[1,64]] fp32 value=1\n");
  RankRunner run(trn2(), system(), runtime(), {&a, &b}, {{{0, 1}}}, 1, core::RunMode::kTimingOnly);
  const chip::ChipResult r = run.run();
  EXPECT_TRUE(r.cores[1].ok());
  bool never_met = false;
  for (const mem::Fault& f : r.cores[0].faults)
    never_met |= f.kind == mem::FaultKind::kPeer &&
                 f.message.find("never met rank(s) 1") != std::string::npos;
  EXPECT_TRUE(never_met) << r.faults_text();
}

TEST(RankRun, ARankOutsideEveryListFaults) {
  const isa::Program p = isa::assemble(program(1.0f, "kind=all_reduce"));
  RankRunner run(trn2(), system(), runtime(), {&p, &p, &p}, {{{0, 1}}}, 1,
                 core::RunMode::kTimingOnly);
  const chip::ChipResult r = run.run();
  ASSERT_FALSE(r.cores[2].faults.empty());
  EXPECT_NE(r.cores[2].faults[0].message.find("rank 2 is in no rank list"), std::string::npos);
}

TEST(RankRun, ACollectiveOnOneCoreAloneHasNoRanks) {
  const core::TimingResult r =
      core::run_timing(trn2(), isa::assemble(program(1.0f, "kind=all_reduce")));
  ASSERT_FALSE(r.faults.empty());
  EXPECT_EQ(r.faults[0].kind, mem::FaultKind::kPeer);
  EXPECT_NE(r.faults[0].message.find("no other ranks"), std::string::npos);
}

// Rank 0 issues A (with rank 1, which comes late) and then B (with rank 2, at once). B ends
// first, but a rank's collectives complete in issue order: what waits for B starts after A.
TEST(RankRun, ARanksCollectivesCompleteInIssueOrder) {
  const std::string a_then_b = R"(.chip trn2
.semaphores 2
.engine pool
  collective sbuf[0:128]+8192 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 kind=all_reduce group=0 signal=s0+1
  collective sbuf[0:128]+16384 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 kind=all_reduce group=1 signal=s1+1
.engine dve
  memset sbuf[0:128]+32768 [[1,64]] fp32 value=1 wait=s1>=1
)";
  const std::string late_a = R"(.chip trn2
.semaphores 1
.engine act
  activation sbuf[0:128]+65536 [[1,16384]] fp32 <- sbuf[0:128]+131072 [[1,16384]] fp32 func=exp signal=s0+1
.engine pool
  collective sbuf[0:128]+8192 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 kind=all_reduce group=0 wait=s0>=1
)";
  const std::string b = R"(.chip trn2
.engine pool
  collective sbuf[0:128]+16384 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 kind=all_reduce group=1
)";
  const isa::Program p0 = isa::assemble(a_then_b), p1 = isa::assemble(late_a),
                     p2 = isa::assemble(b);
  RankRunner run(trn2(), system(), runtime(), {&p0, &p1, &p2}, {{{0, 1}, {2}}, {{0, 2}, {1}}}, 1,
                 core::RunMode::kTimingOnly);
  const chip::ChipResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  const Picoseconds delay = r.cores[1].engines[static_cast<size_t>(isa::Engine::kScalar)].finish;
  const Picoseconds dve = r.cores[0].engines[static_cast<size_t>(isa::Engine::kVector)].finish;
  EXPECT_GT(delay.v, 2 * fabric_price(Op::kAllReduce, 2, 128 * 64 * 4).v);  // A is the late one
  EXPECT_GT(dve.v, delay.v);
}

// Ranks of two physical cores (LNC=2): both cores issue the collective, which moves the rank's
// HBM tensor once; the cores meet in their own group (core_barrier) as in an LNC run.
std::string lnc2_program(float value, const std::string& space) {
  const bool hbm = space == "hbm";
  return fmt::format(R"(.chip trn2
.semaphores 2
.tensor src hbm fp32 [128, 64] scratch
.tensor dst hbm fp32 [128, 64] scratch
.tensor out hbm fp32 [128, 64] output
.engine dve
  memset sbuf[0:128] [[1,64]] fp32 value={0} signal=s0+1
.engine pool
  dma_copy src[0:128] [[1,64]] <- sbuf[0:128] [[1,64]] fp32 wait=s0>=1 signal=s1+1
  core_barrier
  collective {1} <- {2} kind=all_reduce wait=s1>=1 signal=s1+1
  dma_copy out[0:128] [[1,64]] <- dst[0:128] [[1,64]] wait=s1>=2
)",
                     value, hbm ? "dst[0:128] [[1,64]]" : "sbuf[0:128]+4096 [[1,64]] fp32",
                     hbm ? "src[0:128] [[1,64]]" : "sbuf[0:128] [[1,64]] fp32");
}

TEST(RankRun, RanksOfTwoCoresReduceTheirHbmOnce) {
  const isa::Program a = isa::assemble(lnc2_program(1.5f, "hbm"));
  const isa::Program b = isa::assemble(lnc2_program(2.0f, "hbm"));
  RankRunner run(trn2(), system(), runtime(), {&a, &a, &b, &b}, {{{0, 1}}}, 2,
                 core::RunMode::kFunctionalTiming);
  ASSERT_EQ(run.ranks(), 2);
  const chip::ChipResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  ASSERT_EQ(r.cores.size(), 4u);
  for (int k = 0; k < 2; ++k)
    for (float v : out_of(run, k)) ASSERT_EQ(v, 3.5f);
}

TEST(RankRun, RanksOfTwoCoresRefuseSbufCollectives) {
  const isa::Program p = isa::assemble(lnc2_program(1.0f, "sbuf"));
  RankRunner run(trn2(), system(), runtime(), {&p, &p, &p, &p}, {{{0, 1}}}, 2,
                 core::RunMode::kTimingOnly);
  const chip::ChipResult r = run.run();
  ASSERT_FALSE(r.cores[0].faults.empty());
  EXPECT_NE(r.cores[0].faults[0].message.find("HBM tensors"), std::string::npos) << r.faults_text();
}

// all_to_all_v of two ranks: each sends 4 elements to the other and 4 to itself, from the
// metadata written in SBUF before it (counts 4 4, displacements 0 4); the receive counts come
// back in row 2, and the elements past the 8 received keep the dst's fill.
std::string a2av_program(float value) {
  return fmt::format(R"(.chip trn2
.semaphores 2
.tensor src hbm fp32 [1, 16] scratch
.tensor dst hbm fp32 [1, 16] scratch
.tensor out hbm fp32 [1, 16] output
.engine dve
  memset sbuf[0:1] [[1,16]] fp32 value={}
  memset sbuf[0:1]+64 [[1,16]] fp32 value=-1
  memset sbuf[0:1]+128 [[1,2]] uint32 value=4
  memset sbuf[0:1]+136 [[1,1]] uint32 value=0
  memset sbuf[0:1]+140 [[1,1]] uint32 value=4
  memset sbuf[0:1]+144 [[1,2]] uint32 value=9 signal=s0+1
.engine pool
  dma_copy src[0:1] [[1,16]] <- sbuf[0:1] [[1,16]] fp32 wait=s0>=1 signal=s1+1
  dma_copy dst[0:1] [[1,16]] <- sbuf[0:1]+64 [[1,16]] fp32 signal=s1+1
  collective_v dst[0:1] [[1,16]], sbuf[0:1]+128 [[1,6]] uint32 <- src[0:1] [[1,16]] kind=all_to_all_v wait=s1>=2 signal=s1+1
  dma_copy out[0:1] [[1,16]] <- dst[0:1] [[1,16]] wait=s1>=3
)",
                     value);
}

TEST(RankRun, AllToAllVReadsItsSizesWhenItRuns) {
  const isa::Program a = isa::assemble(a2av_program(1.0f)), b = isa::assemble(a2av_program(2.0f));
  RankRunner run(trn2(), system(), runtime(), {&a, &b}, {{{0, 1}}}, 1,
                 core::RunMode::kFunctionalTiming);
  const chip::ChipResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  for (int k = 0; k < 2; ++k) {
    const std::vector<float> out = out_of(run, k);
    for (int e = 0; e < 16; ++e)  // slot i (8 elements) from rank i: 4 sent, 4 kept
      ASSERT_EQ(out[static_cast<size_t>(e)], e % 8 < 4 ? 1.0f + static_cast<float>(e / 8) : -1.0f)
          << "rank " << k << " element " << e;
  }
  EXPECT_GT(r.total.v, fabric_price(Op::kAllToAll, 2, 8 * 4).v);
}

TEST(RankRun, BadGroupsAreInputErrors) {
  const isa::Program p = isa::assemble(program(1.0f, "kind=all_reduce"));
  EXPECT_THROW(RankRunner(trn2(), system(), runtime(), {&p, &p}, {{{0, 2}}}), InputError);
  EXPECT_THROW(RankRunner(trn2(), system(), runtime(), {&p, &p}, {{{0, 1}, {1}}}), InputError);
  EXPECT_THROW(RankRunner(trn2(), system(), runtime(), {&p, &p}, {{}}), InputError);
  std::vector<const isa::Program*> many(129, &p);  // trn2.48xlarge: 16 chips x 8 cores
  EXPECT_THROW(RankRunner(trn2(), system(), runtime(), many, {}), InputError);
  EXPECT_THROW(RankRunner(trn2(), system(), runtime(), {&p, &p, &p}, {}, 2), InputError);
}

}  // namespace
}  // namespace trnsim::fabric
