// Timing of dma_gather / dma_scatter (docs/timing.md "Indirect DMA"): planned as a dma_copy of
// the SBUF side's shape whose HBM side is separate rows (the gathered-rows cap), the bytes
// moved counted from the SBUF side (not the whole table), and the trigger occupying GpSimd for
// the assumed software-DGE time (costk::kSwdgeInstructionNs). Expectations are closed forms of
// spec values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/cost/cost_constants.h"
#include "core/dma/dma_plan.h"
#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"

namespace trnsim::core {
namespace {

using namespace testing;

constexpr int64_t kCols = 4096;      // bf16 elements per row: 8 KiB
constexpr int64_t kRows = 1024;      // rows of the table
constexpr int64_t kOffsets = 65536;  // the offsets' byte in each partition

isa::AccessPattern table() { return hbm(static_cast<int>(kRows), kCols, num::bf16()); }
isa::AccessPattern offsets(int parts) {
  return sbuf(parts, 1, num::int_format(num::Dtype::kInt32), kOffsets);
}
isa::Instruction gather(int parts) {
  return make(isa::Opcode::kDmaGather, isa::Engine::kGpSimd,
              {sbuf(parts, kCols), table(), offsets(parts)});
}
isa::Instruction scatter(int parts) {
  return make(isa::Opcode::kDmaScatter, isa::Engine::kGpSimd,
              {table(), sbuf(parts, kCols), offsets(parts)});
}
// The dma_copy an indirect DMA is planned as: `parts` rows with gaps between them.
isa::Instruction copy_of_rows(int parts, bool load) {
  isa::AccessPattern rows = hbm(parts, kCols, num::bf16());
  rows.partition_stride = 2 * kCols;
  return load ? dma_copy(sbuf(parts, kCols), rows, isa::Engine::kGpSimd)
              : dma_copy(rows, sbuf(parts, kCols), isa::Engine::kGpSimd);
}

TEST(TimingDmaIndirect, PlannedAsACopyOfGatheredRows) {
  for (int parts : {4, 8, 40, 128}) {
    const DmaShape g = dma_shape(gather(parts)), s = dma_shape(scatter(parts));
    EXPECT_EQ(g, dma_shape(copy_of_rows(parts, true))) << parts;
    EXPECT_EQ(s, dma_shape(copy_of_rows(parts, false))) << parts;
    EXPECT_TRUE(g.hbm_gathered);  // a dense table still moves separate rows
    const DmaPlan plan = plan_dma(g, chip("trn2").core);
    EXPECT_EQ(plan.num_pieces, (parts + 7) / 8);  // 8 partitions per engine
    EXPECT_EQ(plan.hbm_read_bytes, parts * kCols * 2);
    EXPECT_EQ(plan.hbm_write_bytes, 0);
    EXPECT_EQ(plan_dma(s, chip("trn2").core).hbm_write_bytes, parts * kCols * 2);
  }
}

TEST(TimingDmaIndirect, StreamsAtTheGatheredRowsRateAfterTheFixedOverhead) {
  for (const char* gen : {"trn1", "trn2", "trn3"}) {
    const auto& c = chip(gen);
    isa::Program p;
    p.add_tensor("T", num::bf16(), {kRows, kCols}, isa::TensorKind::kInput);
    p.append(gather(128));
    const TimingResult r = run_timing(c, p);
    ASSERT_TRUE(r.ok()) << gen << ": " << r.faults.to_string();
    const int64_t bytes = 128 * kCols * 2;
    EXPECT_EQ(r.dma.hbm_read_bytes, bytes) << gen;
    EXPECT_EQ(r.dma.pieces, 16u) << gen;
    const double engines = 16 * c.core.dma.engine_bandwidth_practical_gbps;
    const double share = c.chip.hbm.bandwidth_gbps / c.chip.hbm.stacks.value_or(c.chip.cores);
    const double rate =
        std::min({engines, share, c.core.dma.core_bandwidth_gbps.value_or(engines)});
    // One descriptor per row gathered: 8 on each engine.
    const double overhead_ns =
        c.core.dma.fixed_overhead_ns + 8 * c.core.dma.descriptor_overhead_ns.value_or(0);
    EXPECT_NEAR(static_cast<double>(r.dma.finish.v) * 1e-3, overhead_ns + bytes / rate, 1.0) << gen;
  }
}

TEST(TimingDmaIndirect, SoftwareDgeOccupiesGpSimd) {
  for (const char* gen : {"trn1", "trn2", "trn3"}) {
    const auto& c = chip(gen);
    isa::Program p;
    p.add_tensor("T", num::bf16(), {kRows, kCols}, isa::TensorKind::kInput);
    p.append(gather(16));
    p.append(scatter(16));
    const TimingResult r = run_timing(c, p);
    ASSERT_TRUE(r.ok()) << gen;
    const double cycles = std::ceil(costk::kSwdgeInstructionNs * c.core.gpsimd.clock_ghz);
    const double cycle_ps = 1e3 / c.core.gpsimd.clock_ghz;
    const auto& pool = r.engines[static_cast<size_t>(isa::Engine::kGpSimd)];
    EXPECT_NEAR(static_cast<double>(pool.busy.v), 2 * cycles * cycle_ps, 2.0) << gen;
  }
}

}  // namespace
}  // namespace trnsim::core
