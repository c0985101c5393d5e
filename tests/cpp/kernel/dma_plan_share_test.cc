// TimingProgram plans each DMA shape once and lets the instructions of that shape share the
// plan (core/dma/dma_plan_cache.h). Every instruction's plan must still be exactly what planning it
// on its own gives (core::plan_dma on the instruction), whatever the table's collisions.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/dma/dma_plan_cache.h"
#include "core/timing/timing_program.h"
#include "kernel_test_util.h"
#include "kernels/registry.h"

namespace trnsim {
namespace {

using kernel_test::chip;

void expect_same_plan(const core::DmaPlan& a, const core::DmaPlan& b) {
  EXPECT_EQ(a.queue, b.queue);
  EXPECT_EQ(a.throughput_percent, b.throughput_percent);
  EXPECT_EQ(a.hbm_read_bytes, b.hbm_read_bytes);
  EXPECT_EQ(a.hbm_write_bytes, b.hbm_write_bytes);
  EXPECT_EQ(a.num_pieces, b.num_pieces);
  EXPECT_EQ(a.first_engine, b.first_engine);
  EXPECT_EQ(a.engines, b.engines);
  EXPECT_EQ(a.hbm_sides, b.hbm_sides);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.rows_per_piece, b.rows_per_piece);
  EXPECT_EQ(a.total_bytes, b.total_bytes);
  EXPECT_EQ(a.bytes_per_row, b.bytes_per_row);
}

TEST(DmaPlanShare, EveryInstructionGetsItsOwnPlan) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> kernels{
      {"matmul_tiled", {256, 256, 1024}},
      {"matmul_fully_optimized", {256, 256, 1024, 2, 2, 2}},
      {"attention", {512, 64, 1}}};
  for (const std::string& g : kernel_test::kGenerations)
    for (const auto& [name, args] : kernels) {
      SCOPED_TRACE(g + " " + name);
      const isa::Program p = examples::build_kernel(name, chip(g), args);
      const core::TimingProgram tp(p, chip(g).core);
      int dmas = 0;
      for (isa::Engine e : isa::kAllEngines)
        for (size_t i = 0; i < p.stream(e).size(); ++i) {
          const core::InstrInfo& x = tp.info(e)[i];
          if (!x.dma) continue;
          ++dmas;
          expect_same_plan(tp.dma_plan(x.dma_plan), core::plan_dma(p.stream(e)[i], chip(g).core));
        }
      EXPECT_GT(dmas, 0);
    }
}

TEST(DmaPlanShare, CollisionsReplanInsteadOfSharing) {
  // More distinct shapes than the table has slots, visited twice: every lookup must return a
  // plan equal to the shape's own, shared or not.
  const arch::CoreSpec& spec = chip("trn2").core;
  core::DmaPlanCache cache;
  std::vector<core::DmaPlan> plans;
  for (int round = 0; round < 2; ++round)
    for (int k = 0; k < 300; ++k) {
      core::DmaShape s;
      s.has_operands = true;
      s.src_space = isa::Space::kHbm;
      s.dst_partitions = 1 + k % 128;
      s.dst_start_partition = (k % 4) * 32;
      s.queue = static_cast<int16_t>(k % 7);
      s.dst_bytes = s.src_bytes = 64 * (k + 1);
      bool added = false;
      const int32_t i = cache.find_or_add(s, spec, plans, added);
      expect_same_plan(plans[static_cast<size_t>(i)], core::plan_dma(s, spec));
    }
}

}  // namespace
}  // namespace trnsim
