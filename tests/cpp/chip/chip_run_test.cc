// A whole chip on one simulator (chip/chip_run.h): every physical core's program at once, one
// HBM stack pool per chip.hbm.stacks, logical cores of LNC physical cores. Expected times are
// closed forms from the spec's rates (stack bandwidth, the DMA engines' practical rate) and
// single-core runs of the same programs, so each test checks what the chip adds.
#include "chip/chip_run.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "arch/arch.h"
#include "base/error.h"
#include "chip/lnc.h"
#include "core/timing/core_timing.h"
#include "core/timing/timing_run.h"
#include "isa/assembler.h"

namespace trnsim::chip {
namespace {

constexpr int64_t kRows = 128, kCols = 16384;  // 8 MiB of fp32 per load

// One dma_copy of a [128, 16384] fp32 tensor from HBM into SBUF: 8 MiB through the stack.
const isa::Program& big_load() {
  static const isa::Program p = isa::assemble(fmt::format(R"(.chip trn2
.tensor X hbm fp32 [{0}, {1}] input
.engine sp
  dma_copy sbuf[0:128] [[1,{1}]] fp32 <- X[0:128] [[1,{1}]]
)",
                                                          kRows, kCols));
  return p;
}

// The same tensor table, nothing run: a core left idle.
const isa::Program& idle() {
  static const isa::Program p =
      isa::assemble(fmt::format(".chip trn2\n.tensor X hbm fp32 [{}, {}] input\n", kRows, kCols));
  return p;
}

// Without descriptor time, which runs at the stack-bound rate too (docs/timing.md "DMA") and
// would blur the fixed costs these tests separate from the bytes.
arch::ChipSpec trn2_at(double hbm_scale) {
  const arch::ChipSpec base = arch::load_chip("trn2");
  return arch::load_chip(
      "trn2", {arch::parse_override(fmt::format("chip.hbm.bandwidth_gbps={}",
                                                base.chip.hbm.bandwidth_gbps * hbm_scale)),
               arch::parse_override("core.dma.descriptor_overhead_ns=0")});
}

ChipResult run_cores(const arch::ChipSpec& chip, std::vector<const isa::Program*> programs,
                     int lnc = 1, core::RunMode mode = core::RunMode::kTimingOnly) {
  ChipRunner r(chip, std::move(programs), lnc, mode);
  return r.run();
}

std::vector<const isa::Program*> copies(const isa::Program& p, int n) {
  return std::vector<const isa::Program*>(static_cast<size_t>(n), &p);
}

// Seconds to move `bytes` at `bytes_per_second`, in picoseconds.
double transfer_ps(double bytes, double bytes_per_second) {
  return bytes * 1e12 / bytes_per_second;
}

// One core's DMA engines at their practical rate (core.dma.*; the core's cap when the spec
// has one), bytes per second.
double engines_rate(const arch::ChipSpec& c) {
  const double engines = c.core.dma.engines * c.core.dma.engine_bandwidth_practical_gbps;
  return std::min(engines, c.core.dma.core_bandwidth_gbps.value_or(engines)) * 1e9;
}

constexpr double kLoadBytes = kRows * kCols * 4.0;

// The fixed costs of a big_load run alone on `chip` (its time less the bytes at the rate one
// core gets alone: min(its engines, the stack)).
double fixed_ps(const arch::ChipSpec& chip, const core::TimingResult& alone) {
  const double alone_rate =
      std::min(engines_rate(chip), static_cast<double>(core::hbm_stack_bandwidth(chip)));
  return static_cast<double>(alone.total.v) - transfer_ps(kLoadBytes, alone_rate);
}

// A big_load whose core shares its stack with `sharing` - 1 other loading cores ends at the
// fixed costs of a load plus its bytes at min(the core's engines, its share of the stack).
double expected_load_ps(const arch::ChipSpec& chip, double fixed, int sharing) {
  const double share = static_cast<double>(core::hbm_stack_bandwidth(chip)) / sharing;
  return fixed + transfer_ps(kLoadBytes, std::min(engines_rate(chip), share));
}

// Trn2: a stack serves 725 GB/s and two cores' engines would take 2 x 368: eight cores loading
// at once (two per stack) each get 362.5 GB/s, slower than one core alone at 368.
TEST(ChipRunner, EightCoresLoadingAtOnceTakeLongerThanOneWhenTheyShareAStack) {
  const arch::ChipSpec chip = trn2_at(1.0);
  const core::TimingResult alone = core::run_timing(chip, big_load());
  const ChipResult all = run_cores(chip, copies(big_load(), 8));
  ASSERT_TRUE(alone.ok() && all.ok()) << all.faults_text();
  EXPECT_GT(all.total.v, alone.total.v);
  EXPECT_NEAR(static_cast<double>(all.total.v), expected_load_ps(chip, fixed_ps(chip, alone), 2),
              1e3);                                                             // 1 ns
  for (const core::TimingResult& r : all.cores) EXPECT_EQ(r.total, all.total);  // alike
  EXPECT_EQ(all.cores.size(), 8u);
}

// chip.hbm.bandwidth_gbps sets every stack's rate: an eight-core run's load time follows
// min(engines, stack / 2) per core. HBM-bound (0.25x): halving doubles the transfer, doubling
// halves it; at 1x doubling gains only the last 1.5 % (the engines bind at 368 GB/s).
TEST(ChipRunner, HbmBandwidthScalesAnHbmBoundEightCoreRun) {
  const arch::ChipSpec base = trn2_at(1.0);
  const core::TimingResult alone = core::run_timing(base, big_load());
  const double fixed = fixed_ps(base, alone);  // the same at every bandwidth
  std::map<double, double> total;              // scale -> chip time, ps
  for (double scale : {0.125, 0.25, 0.5, 1.0, 2.0}) {
    const arch::ChipSpec chip = trn2_at(scale);
    const ChipResult r = run_cores(chip, copies(big_load(), 8));
    ASSERT_TRUE(r.ok()) << r.faults_text();
    total[scale] = static_cast<double>(r.total.v);
    EXPECT_NEAR(total[scale], expected_load_ps(chip, fixed, 2), 1e3) << "scale " << scale;
  }
  EXPECT_NEAR((total[0.125] - fixed) / (total[0.25] - fixed), 2.0, 1e-4);
  EXPECT_NEAR((total[0.5] - fixed) / (total[0.25] - fixed), 0.5, 1e-4);
  EXPECT_NEAR((total[0.5] - fixed) / (total[1.0] - fixed), 2.0, 1e-4);
  EXPECT_NEAR((total[2.0] - fixed) / (total[1.0] - fixed), 362.5 / 368, 1e-4);
  EXPECT_EQ(total[2.0], static_cast<double>(alone.total.v));  // engine-bound: as alone
}

// Core i sits on stack i / 2 on trn2: two loading cores on one stack share it, on two stacks
// they do not. With a what-if stack of 200 GB/s, below one core's engines.
TEST(ChipRunner, CoresShareOnlyTheirOwnStack) {
  const arch::ChipSpec slow = trn2_at(800.0 / 2900.0);
  EXPECT_EQ(stack_of(slow, 0), 0);
  EXPECT_EQ(stack_of(slow, 1), 0);
  EXPECT_EQ(stack_of(slow, 2), 1);
  EXPECT_EQ(stack_of(slow, 7), 3);
  const core::TimingResult alone = core::run_timing(slow, big_load());
  const ChipResult same = run_cores(slow, {&big_load(), &big_load()});
  const ChipResult apart = run_cores(slow, {&big_load(), &idle(), &big_load()});
  EXPECT_NEAR(static_cast<double>(same.total.v), expected_load_ps(slow, fixed_ps(slow, alone), 2),
              1e3);
  EXPECT_EQ(apart.cores[0].total, alone.total);
  EXPECT_EQ(apart.cores[2].total, alone.total);
}

// Where the cores do not interact (one loading core per stack, the others idle) every core's
// figures are bit-identical to its run alone.
TEST(ChipRunner, CoresThatDoNotInteractRunAsAlone) {
  const arch::ChipSpec chip = trn2_at(0.25);  // HBM-bound: sharing would show
  const core::TimingResult alone = core::run_timing(chip, big_load());
  std::vector<const isa::Program*> programs;
  for (int c = 0; c < 8; ++c) programs.push_back(c % 2 == 0 ? &big_load() : &idle());
  const ChipResult r = run_cores(chip, programs);
  ASSERT_TRUE(r.ok()) << r.faults_text();
  for (int c = 0; c < 8; c += 2) {
    const core::TimingResult& got = r.cores[static_cast<size_t>(c)];
    EXPECT_EQ(got.total, alone.total) << c;
    EXPECT_EQ(got.dma.finish, alone.dma.finish) << c;
    EXPECT_EQ(got.dma.hbm_read_bytes, alone.dma.hbm_read_bytes) << c;
    EXPECT_EQ(got.instructions, alone.instructions) << c;
  }
  EXPECT_EQ(r.total, alone.total);
}

// Core c copies rows [16c, 16c + 16) of X to out through its SBUF (row offsets in +K): eight cores
// write one shared HBM, and the values are those of the copy.
TEST(ChipRunner, EveryCoreWritesTheSharedHbm) {
  std::vector<isa::Program> progs;
  for (int c = 0; c < 8; ++c)
    progs.push_back(isa::assemble(fmt::format(R"(.chip trn2
.semaphores 1
.tensor X hbm fp32 [128, 64] input
.tensor out hbm fp32 [128, 64] output
.engine sp
  dma_copy sbuf[0:16] [[1,64]] fp32 <- X[0:16]+{0} [[1,64]] signal=s0+1
  dma_copy out[0:16]+{0} [[1,64]] <- sbuf[0:16] [[1,64]] fp32 wait=s0>=1
)",
                                              16 * c * 64)));
  std::vector<const isa::Program*> ptrs;
  for (const isa::Program& p : progs) ptrs.push_back(&p);
  const arch::ChipSpec chip = trn2_at(1.0);  // the runner keeps a reference
  ChipRunner run(chip, ptrs, 2, core::RunMode::kFunctionalTiming);
  std::vector<float> x(128 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f - 7.0f;
  run.write_tensor_f32("X", x);
  const ChipResult r = run.run();
  ASSERT_TRUE(r.ok()) << r.faults_text();
  const std::vector<float> out = run.read_tensor_f32("out");
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], x[i]) << "element " << i;
  EXPECT_NE(r.summary().find("chip of 8 physical cores (4 logical cores of LNC=2)"),
            std::string::npos)
      << r.summary();
}

// Barriers meet only inside a logical core: cores 0 and 1 (early, late) and cores 2 and 3
// (early, early) each pass as their own pair would, not at the chip's latest arrival.
TEST(ChipRunner, BarriersMeetOnlyInsideALogicalCore) {
  const arch::ChipSpec chip = trn2_at(1.0);
  const isa::Program early = isa::assemble(".chip trn2\n.engine pool\n  core_barrier\n");
  const isa::Program late = isa::assemble(R"(.chip trn2
.semaphores 1
.engine dve
  memset sbuf[0:128] [[1,8192]] fp32 value=1 signal=s0+1
.engine pool
  core_barrier wait=s0>=1
)");
  const ChipResult r = run_cores(chip, {&early, &late, &early, &early}, 2);
  ASSERT_TRUE(r.ok()) << r.faults_text();
  const ChipResult pair_a = run_cores(chip, {&early, &late}, 2);
  const ChipResult pair_b = run_cores(chip, {&early, &early}, 2);
  EXPECT_EQ(r.cores[0].total, pair_a.cores[0].total);
  EXPECT_EQ(r.cores[1].total, pair_a.cores[1].total);
  EXPECT_EQ(r.cores[2].total, pair_b.cores[0].total);
  EXPECT_EQ(r.cores[3].total, pair_b.cores[1].total);
  EXPECT_LT(r.cores[2].total.v, r.cores[0].total.v);
}

TEST(ChipRunner, ASendRecvPeerOutsideItsLogicalCoreIsAFault) {
  const std::string text = R"(.chip trn2
.engine pool
  sendrecv sbuf[0:128]+2048 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 send_to=2 recv_from=2
)";
  const isa::Program p = isa::assemble(text);
  const ChipResult r = run_cores(trn2_at(1.0), copies(p, 4), 2);
  ASSERT_FALSE(r.cores[0].faults.empty());
  EXPECT_EQ(r.cores[0].faults[0].kind, mem::FaultKind::kPeer);
}

TEST(ChipRunner, RunsAreDeterministic) {
  const ChipResult a = run_cores(trn2_at(0.5), copies(big_load(), 8), 2);
  const ChipResult b = run_cores(trn2_at(0.5), copies(big_load(), 8), 2);
  for (size_t c = 0; c < 8; ++c) {
    EXPECT_EQ(a.cores[c].total, b.cores[c].total);
    EXPECT_EQ(a.cores[c].events, b.cores[c].events);
  }
}

void expect_input_error(const std::function<void()>& f, const std::string& where,
                        const std::string& key) {
  try {
    f();
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
    EXPECT_EQ(e.key(), key) << e.what();
  }
}

TEST(ChipRunner, BadInputIsAnErrorNamingTheKey) {
  const arch::ChipSpec chip = trn2_at(1.0);
  expect_input_error([&] { ChipRunner(chip, copies(idle(), 9)); }, "programs", "chip.cores");
  expect_input_error([&] { ChipRunner(chip, copies(idle(), 3), 2); }, "lnc", "chip.lnc.degrees");
  expect_input_error([&] { ChipRunner(chip, copies(idle(), 8), 4); }, "lnc", "chip.hbm.stacks");
  expect_input_error([&] { ChipRunner(chip, {}); }, "chip", "programs");
  const arch::ChipSpec trn1 = arch::load_chip("trn1");
  expect_input_error([&] { ChipRunner(trn1, copies(idle(), 3)); }, "programs", "chip.cores");
  expect_input_error([&] { ChipRunner(trn1, copies(idle(), 2), 2); }, "lnc", "chip.hbm.stacks");
}

}  // namespace
}  // namespace trnsim::chip
