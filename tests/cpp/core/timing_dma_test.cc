// DMA timing (HARDWARE.md s4): a piece streams bytes / per-engine bandwidth after the fixed
// trigger-to-start overhead; a transfer spreads over up to 16 engines (8 partitions each); the
// engines share the core's HBM bandwidth. Expectations are computed here from spec values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"
#include "profile/trace.h"

namespace trnsim::core {
namespace {

using namespace testing;

// ceil(bytes / (gbps x 1e9 B/s)) in picoseconds.
int64_t stream_ps(int64_t bytes, double gbps) {
  const auto rate = static_cast<long double>(std::llround(gbps * 1e9));
  return static_cast<int64_t>(std::ceil(static_cast<long double>(bytes) * 1e12L / rate));
}

int64_t overhead_ps(const arch::ChipSpec& c) {
  return std::llround(c.core.dma.fixed_overhead_ns * 1e3);
}

TEST(TimingDma, SingleEngineTransferIsOverheadPlusBytesOverBandwidth) {
  // VALIDATION.md s3: Trn2, HBM -> SBUF of a [4, 4096] bf16 tensor (32 KiB) on one DMA engine.
  const auto& trn2 = chip("trn2");
  isa::Program p;
  p.append(with_signal(dma_copy(sbuf(4, 4096), hbm(4, 4096, num::bf16())), 0));
  profile::Trace trace;
  TimingOptions o;
  o.trace = &trace;
  const TimingResult r = run_timing(trn2, p, o);
  ASSERT_TRUE(r.ok()) << r.faults.to_string();
  ASSERT_EQ(r.dma.pieces, 1u);  // 4 partitions: one engine (8 partitions per engine)
  const int64_t bytes = 4 * 4096 * 2;
  EXPECT_EQ(r.dma.bytes, bytes);
  EXPECT_EQ(r.dma.hbm_read_bytes, bytes);
  const int64_t data = stream_ps(bytes, trn2.core.dma.engine_bandwidth_practical_gbps);
  // The piece's span on its DMA engine is the data phase; the transfer completes (and signals)
  // fixed overhead + data after the trigger issued at t = 0.
  const profile::Span* piece = nullptr;
  for (const auto& s : trace.spans())
    if (trace.tracks()[s.track].name == "dma0.q0") piece = &s;
  ASSERT_NE(piece, nullptr);
  EXPECT_EQ((piece->end - piece->start).v, data);
  EXPECT_EQ(r.dma.finish.v, overhead_ps(trn2) + data);
  const double measured_ns = 1416.0;
  std::printf(
      "single DMA (trn2, 32 KiB, one engine): engine busy %.1f ns vs %.0f ns measured "
      "(%+.1f%%); trigger to completion %.1f ns (includes the %.0f ns fixed overhead)\n",
      data / 1e3, measured_ns, 100.0 * (data / 1e3 - measured_ns) / measured_ns,
      r.dma.finish.v / 1e3, trn2.core.dma.fixed_overhead_ns);
}

// ... or the core's DMA cap (dma.core_bandwidth_gbps, calibrated on Trn1: docs/timing.md).
TEST(TimingDma, SixteenEnginesAreSixteenTimesFasterUntilTheHbmStackLimits) {
  for (const char* gen : {"trn1", "trn2", "trn3"}) {
    const auto& c = chip(gen);
    const int64_t per_partition = 64 * 1024;  // bytes: large pieces
    isa::Program one, all;
    // The same 8 MiB: 8 partitions (one engine) x 1 MiB, or 128 partitions (16 engines) x 64 KiB.
    one.append(
        dma_copy(sbuf(8, per_partition * 16 / 2), hbm(8, per_partition * 16 / 2, num::bf16())));
    all.append(dma_copy(sbuf(128, per_partition / 2), hbm(128, per_partition / 2, num::bf16())));
    const TimingResult r1 = run_timing(c, one), r16 = run_timing(c, all);
    EXPECT_EQ(r1.dma.pieces, 1u);
    EXPECT_EQ(r16.dma.pieces, 16u);
    const double d1 = static_cast<double>(r1.dma.finish.v - overhead_ps(c));
    const double d16 = static_cast<double>(r16.dma.finish.v - overhead_ps(c));
    const double engine = c.core.dma.engine_bandwidth_practical_gbps;
    // The core alone on its HBM stack has the stack's bandwidth (core/dma/hbm_pool.h).
    const double share = c.chip.hbm.bandwidth_gbps / c.chip.hbm.stacks.value_or(c.chip.cores);
    const double cap = c.core.dma.core_bandwidth_gbps.value_or(16 * engine);
    const double expect = std::min({16 * engine, share, cap}) / engine;
    EXPECT_NEAR(d1 / d16, expect, expect * 1e-3) << gen;
    EXPECT_NEAR(r16.hbm_gbps() * r16.total.v, 8.0 * 1024 * 1024 * 1e3, 1e3);
    std::printf(
        "%s: 16 engines %.2fx one engine (engine %.1f GB/s, HBM share %.1f GB/s, core cap %.1f "
        "GB/s)\n",
        gen, d1 / d16, engine, share, cap);
  }
}

TEST(TimingDma, PiecesOfOneQueueRunInOrderAndSignalsWaitForTheWholeTransfer) {
  const auto& trn1 = chip("trn1");
  const int64_t bytes = 4 * 4096 * 2;
  isa::Program p;
  // Two single-engine transfers on the same engine and queue, then a VectorE op that waits for
  // the second.
  p.append(dma_copy(sbuf(4, 4096), hbm(4, 4096, num::bf16())));
  p.append(with_signal(dma_copy(sbuf(4, 4096, num::bf16(), 8192), hbm(4, 4096, num::bf16())), 1));
  p.append(with_wait(unary(isa::Opcode::kTensorCopy, isa::Engine::kVector, sbuf(4, 64),
                           sbuf(4, 64, num::bf16(), 8192)),
                     1, 1));
  const TimingResult r = run_timing(trn1, p);
  ASSERT_TRUE(r.ok()) << r.faults.to_string();
  const int64_t data = stream_ps(bytes, trn1.core.dma.engine_bandwidth_practical_gbps);
  // The second is ready one Sync cycle after the first but waits for the engine.
  EXPECT_EQ(r.dma.finish.v, overhead_ps(trn1) + 2 * data);
  EXPECT_GT(r.total, r.dma.finish);
}

TEST(TimingDma, TransposeAndLegacyAccumulateRunSlower) {
  const auto& trn2 = chip("trn2");
  isa::Instruction t = dma_copy(sbuf(4, 4096), hbm(4, 4096, num::bf16()));
  const int64_t data = stream_ps(4 * 4096 * 2, trn2.core.dma.engine_bandwidth_practical_gbps);
  t.p.dma_accumulate = true;  // NC-v3: through the DMA CC engines at 50% (AG4)
  isa::Program p;
  p.append(t);
  const TimingResult r = run_timing(trn2, p);
  EXPECT_NEAR(static_cast<double>(r.dma.finish.v - overhead_ps(trn2)), 2.0 * data, 2.0);
}

}  // namespace
}  // namespace trnsim::core
