// DMA timing (HARDWARE.md s4): a piece streams bytes / per-engine bandwidth after the fixed
// trigger-to-start overhead; a transfer spreads over up to 16 engines (8 partitions each); the
// engines share the core's HBM bandwidth. Expectations are computed here from spec values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/dma/dma_plan.h"
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
  // Bytes at the engine's rate, and one descriptor per partition (the HBM side is one range).
  const int64_t data = stream_ps(bytes, trn2.core.dma.engine_bandwidth_practical_gbps) +
                       4 * std::llround(trn2.core.dma.descriptor_overhead_ns.value_or(0) * 1e3);
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

// ... or the core's DMA cap for contiguous blocks (dma.core_block_bandwidth_gbps: docs/timing.md).
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
    const double cap = c.core.dma.core_block_bandwidth_gbps.value_or(
        c.core.dma.core_bandwidth_gbps.value_or(16 * engine));
    const double expect = std::min({16 * engine, share, cap}) / engine;
    EXPECT_NEAR(d1 / d16, expect, expect * 1e-3) << gen;
    EXPECT_NEAR(r16.hbm_gbps() * r16.total.v, 8.0 * 1024 * 1024 * 1e3, 1e3);
    std::printf(
        "%s: 16 engines %.2fx one engine (engine %.1f GB/s, HBM share %.1f GB/s, core cap %.1f "
        "GB/s)\n",
        gen, d1 / d16, engine, share, cap);
  }
}

// Rows gathered from HBM (gaps between them) are held to dma.core_bandwidth_gbps, a contiguous
// block of the same size to dma.core_block_bandwidth_gbps; both kinds at once share the core's
// time byte by byte (core/dma/dma_engines.h).
TEST(TimingDma, GatheredRowsAndContiguousBlocksHaveTheirOwnCaps) {
  const auto& c = chip("trn1");
  ASSERT_TRUE(c.core.dma.core_bandwidth_gbps && c.core.dma.core_block_bandwidth_gbps);
  const double gathered = *c.core.dma.core_bandwidth_gbps;
  const double block = *c.core.dma.core_block_bandwidth_gbps;
  ASSERT_LT(gathered, block);
  const int64_t cols = 8192;  // bf16 elements per row: 16 KiB
  const int64_t bytes = 128 * cols * 2;
  isa::AccessPattern rows = hbm(128, cols, num::bf16());
  rows.partition_stride = 2 * cols;  // every other row of a [256, cols] matrix
  isa::Program g, b, both;
  g.append(dma_copy(sbuf(128, cols, num::bf16()), rows));
  b.append(dma_copy(sbuf(128, cols, num::bf16()), hbm(128, cols, num::bf16())));
  both.append(dma_copy(sbuf(128, cols, num::bf16()), rows));
  both.append(
      dma_copy(sbuf(128, cols, num::bf16(), 2 * cols), hbm(128, cols, num::bf16(), 4 * bytes)));
  const double engines = 16 * c.core.dma.engine_bandwidth_practical_gbps;
  const auto stream_ns = [&](const TimingResult& r) {
    return static_cast<double>(r.dma.finish.v - overhead_ps(c)) * 1e-3;
  };
  const TimingResult rg = run_timing(c, g), rb = run_timing(c, b), r2 = run_timing(c, both);
  ASSERT_TRUE(rg.ok() && rb.ok() && r2.ok());
  EXPECT_NEAR(stream_ns(rg), bytes / std::min(gathered, engines), 1.0);
  EXPECT_NEAR(stream_ns(rb), bytes / std::min(block, engines), 1.0);
  // The two transfers take turns on each engine's queue 0 in order: first the gathered one
  // (16 engines gathering), then the block; the core's time adds up.
  EXPECT_NEAR(stream_ns(r2), bytes / std::min(gathered, engines) + bytes / std::min(block, engines),
              2.0);
}

// Which HBM access patterns count as one contiguous block (DmaShape::hbm_gathered).
TEST(TimingDma, AContiguousBlockIsRowsThatCoverOneRange) {
  const auto gathered = [](const isa::AccessPattern& h) {
    return dma_shape(dma_copy(sbuf(h.num_partitions, h.free_elements(), h.dtype), h)).hbm_gathered;
  };
  isa::AccessPattern block = hbm(128, 512, num::fp32());
  EXPECT_FALSE(gathered(block));
  isa::AccessPattern gaps = block;
  gaps.partition_stride = 1024;  // rows of a wider matrix
  EXPECT_TRUE(gathered(gaps));
  isa::AccessPattern bcast = block;
  bcast.partition_stride = 0;  // every partition reads the same row
  EXPECT_TRUE(gathered(bcast));
  isa::AccessPattern one_row = hbm(1, 512, num::fp32());
  one_row.partition_stride = 0;  // a single row: its stride does not matter
  EXPECT_FALSE(gathered(one_row));
  // [rows, 2, 256] walking a [rows, 512] block in order is still the block; a column of it is not.
  isa::AccessPattern two = block;
  two.ndim = 2;
  two.dims[0] = {256, 2};
  two.dims[1] = {1, 256};
  EXPECT_FALSE(gathered(two));
  isa::AccessPattern column = block;
  column.dims[0] = {512, 1};
  column.dims[1] = {};
  column.ndim = 1;
  column.partition_stride = 1;
  EXPECT_FALSE(gathered(column));  // one element per row, rows back to back: a [128] vector
  column.partition_stride = 512;
  EXPECT_TRUE(gathered(column));  // a column of the [128, 512] matrix
  // Rows p, 128 + p, 256 + p, 384 + p of a [512, 64] block into partition p (cached k or v
  // tiles): the whole block in another order, still a block; with every other tile skipped,
  // rows with gaps.
  isa::AccessPattern tiles = hbm(128, 64, num::fp32());
  tiles.ndim = 2;
  tiles.dims[0] = {128 * 64, 4};
  tiles.dims[1] = {1, 64};
  EXPECT_FALSE(gathered(tiles));
  tiles.dims[0].stride = 2 * 128 * 64;
  EXPECT_TRUE(gathered(tiles));
  // A transposed read (unit stride across rows, not along them) is gathered elements.
  isa::AccessPattern across = hbm(128, 64, num::fp32());
  across.partition_stride = 1;
  across.dims[0] = {128, 64};
  EXPECT_TRUE(gathered(across));
  // SBUF-to-SBUF: no HBM side.
  EXPECT_FALSE(dma_shape(dma_copy(sbuf(128, 64), sbuf(128, 64, num::bf16(), 4096))).hbm_gathered);
}

// A gathered transfer and a block transfer streaming at the same time, on engines 0-7 and 8-15
// (their SBUF partitions decide), share the core's time: each byte costs 1 / its kind's cap.
TEST(TimingDma, MixedKindsShareTheCoreTimeByteByByte) {
  const auto& c = chip("trn1");
  const double gathered = *c.core.dma.core_bandwidth_gbps;
  const double block = *c.core.dma.core_block_bandwidth_gbps;
  const int64_t cols = 4096;  // bf16
  isa::AccessPattern rows = hbm(64, cols, num::bf16());
  rows.partition_stride = 2 * cols;
  isa::AccessPattern upper = sbuf(64, cols, num::bf16());
  upper.start_partition = 64;
  isa::Program p;
  p.append(dma_copy(sbuf(64, cols, num::bf16()), rows));
  p.append(dma_copy(upper, hbm(64, cols, num::bf16(), 1 << 22)));
  const TimingResult r = run_timing(c, p);
  ASSERT_TRUE(r.ok()) << r.faults.to_string();
  ASSERT_EQ(r.dma.pieces, 16u);
  // Eight engines of each kind at rate x: 8x / gathered + 8x / block = 1 (GB/s = bytes/ns).
  const double rate =
      std::min(c.core.dma.engine_bandwidth_practical_gbps, 1.0 / (8.0 / gathered + 8.0 / block));
  ASSERT_LT(rate, c.core.dma.engine_bandwidth_practical_gbps);  // the caps bind
  const double piece = 8.0 * cols * 2;                          // bytes one engine moves
  // The second starts one Sync cycle after the first; allow a few ns for that.
  EXPECT_NEAR(static_cast<double>(r.dma.finish.v - overhead_ps(c)) * 1e-3, piece / rate, 5.0);
}

// A store of a contiguous block (SBUF -> HBM) is held to dma.core_write_bandwidth_gbps, the
// load of the same block to the read cap; a load and a store streaming at once on engines 0-7
// and 8-15 share the core's time byte by byte; without a write cap a store runs as a load.
TEST(TimingDma, WritesToHbmHaveTheirOwnCap) {
  const auto& c = chip("trn1");
  ASSERT_TRUE(c.core.dma.core_write_bandwidth_gbps && c.core.dma.core_block_bandwidth_gbps);
  const double write = *c.core.dma.core_write_bandwidth_gbps;
  const double engines = 16 * c.core.dma.engine_bandwidth_practical_gbps;
  const double read = std::min(*c.core.dma.core_block_bandwidth_gbps, engines);
  ASSERT_LT(write, read);
  const int64_t cols = 8192;  // bf16: 16 KiB per partition
  const double bytes = 128.0 * cols * 2;
  isa::Program load, store;
  load.append(dma_copy(sbuf(128, cols, num::bf16()), hbm(128, cols, num::bf16())));
  store.append(dma_copy(hbm(128, cols, num::bf16()), sbuf(128, cols, num::bf16())));
  const auto stream_ns = [&](const arch::ChipSpec& spec, const isa::Program& p) {
    const TimingResult r = run_timing(spec, p);
    EXPECT_TRUE(r.ok()) << r.faults.to_string();
    return static_cast<double>(r.dma.finish.v - overhead_ps(spec)) * 1e-3;
  };
  EXPECT_NEAR(stream_ns(c, load), bytes / read, 1.0);
  EXPECT_NEAR(stream_ns(c, store), bytes / write, 1.0);
  // Half the partitions each way at once: 8 engines at rate x reading, 8 writing,
  // 8x / read + 8x / write = 1.
  isa::AccessPattern upper = sbuf(64, cols, num::bf16());
  upper.start_partition = 64;
  isa::Program both;
  both.append(dma_copy(sbuf(64, cols, num::bf16()), hbm(64, cols, num::bf16())));
  both.append(dma_copy(hbm(64, cols, num::bf16(), 1 << 22), upper));
  const double rate =
      std::min(c.core.dma.engine_bandwidth_practical_gbps, 1.0 / (8.0 / read + 8.0 / write));
  EXPECT_NEAR(stream_ns(c, both), 8.0 * cols * 2 / rate, 5.0);
  arch::ChipSpec no_cap = c;
  no_cap.core.dma.core_write_bandwidth_gbps.reset();
  EXPECT_NEAR(stream_ns(no_cap, store), bytes / read, 1.0);
}

// Each contiguous range a transfer moves (a descriptor) costs its engine
// dma.descriptor_overhead_ns besides its bytes (DMA-BW: per-packet overhead): the same 256 KiB
// as one 2 KiB row per partition or as four 512 B rows from four places in HBM differ by the
// extra descriptors on each engine; an SBUF side needs a range per partition whatever HBM holds.
TEST(TimingDma, EachDescriptorCostsItsEngineAFixedTime) {
  arch::ChipSpec c = chip("trn2");
  c.core.dma.descriptor_overhead_ns = 10.0;
  const double engine = c.core.dma.engine_bandwidth_practical_gbps;
  const int64_t cols = 512;  // fp32: 2 KiB per partition
  isa::AccessPattern rows = hbm(128, cols, num::fp32());
  rows.partition_stride = 4 * cols;    // each partition's 2 KiB: one row of a [128, 2048] matrix
  isa::AccessPattern quarters = rows;  // ... or four 512 B pieces, 2048 elements apart
  quarters.ndim = 2;
  quarters.dims[0] = {2048, 4};
  quarters.dims[1] = {1, cols / 4};
  quarters.partition_stride = cols / 4;
  const auto descriptors = [&](const isa::AccessPattern& h) {
    return dma_shape(dma_copy(sbuf(128, cols, num::fp32()), h)).descriptors;
  };
  EXPECT_EQ(descriptors(rows), 128);
  EXPECT_EQ(descriptors(quarters), 512);
  EXPECT_EQ(descriptors(hbm(128, cols, num::fp32())), 128);  // one HBM block, 128 partitions
  // Unit-stride ranges are cut at 64 KiB, the descriptor's 16-bit length (DRV).
  EXPECT_EQ(dma_shape(dma_copy(hbm(1, 1 << 20, num::fp32(), 1 << 24), hbm(1, 1 << 20, num::fp32())))
                .descriptors,
            64);
  // A transposed read: one element a range.
  isa::AccessPattern across = hbm(128, 64, num::fp32());
  across.partition_stride = 1;
  across.dims[0] = {128, 64};
  EXPECT_EQ(dma_shape(dma_copy(sbuf(128, 64, num::fp32()), across)).descriptors, 128 * 64);
  const auto stream_ns = [&](const arch::ChipSpec& spec, const isa::AccessPattern& h) {
    isa::Program p;
    p.append(dma_copy(sbuf(128, cols, num::fp32()), h));
    const TimingResult r = run_timing(spec, p);
    EXPECT_TRUE(r.ok()) << r.faults.to_string();
    return static_cast<double>(r.dma.finish.v - overhead_ps(spec)) * 1e-3;
  };
  // 8 partitions per engine: 8 KiB and 8 or 32 descriptors.
  const double data = 8.0 * cols * 4 / engine;
  EXPECT_NEAR(stream_ns(c, rows), data + 8 * 10.0, 0.01);
  EXPECT_NEAR(stream_ns(c, quarters), data + 32 * 10.0, 0.01);
  arch::ChipSpec none = c;
  none.core.dma.descriptor_overhead_ns.reset();
  EXPECT_NEAR(stream_ns(none, quarters), data, 0.01);
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
  // The bytes at half rate; the four descriptors (one a partition) at their fixed time.
  const double descriptors = 4 * trn2.core.dma.descriptor_overhead_ns.value_or(0) * 1e3;
  EXPECT_NEAR(static_cast<double>(r.dma.finish.v - overhead_ps(trn2)), 2.0 * data + descriptors,
              2.0);
}

}  // namespace
}  // namespace trnsim::core
