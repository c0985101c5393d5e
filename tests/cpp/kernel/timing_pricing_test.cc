// TimingProgram prices an instruction once per run of equal shapes: an instruction with the
// same opcode, parameters and operands as the last one priced on its engine (offsets aside)
// takes that one's cost, FLOPs, shared ports and DMA plan (core/timing/timing_program.cc). Every
// record must still be exactly what pricing the instruction on its own gives (the DMA plans:
// dma_plan_share_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/cost/cost.h"
#include "core/timing/timing_program.h"
#include "isa/op_table.h"
#include "kernel_test_util.h"
#include "kernels/registry.h"

namespace trnsim {
namespace {

using kernel_test::chip;

void expect_priced_alone(const isa::Program& p, const arch::CoreSpec& spec) {
  const core::TimingProgram tp(p, spec);
  for (isa::Engine e : isa::kAllEngines)
    for (size_t i = 0; i < p.stream(e).size(); ++i) {
      const isa::Instruction& ins = p.stream(e)[i];
      const core::InstrInfo& x = tp.info(e)[i];
      SCOPED_TRACE(std::string(isa::engine_name(e)) + " " + std::to_string(i));
      const core::Cost c = core::instruction_cost(ins, spec);
      EXPECT_EQ(x.cost.ii, c.ii);
      EXPECT_EQ(x.cost.latency, c.latency);
      EXPECT_EQ(x.cost.unit, c.unit);
      EXPECT_EQ(x.cost.waits_background, c.waits_background);
      EXPECT_EQ(x.op, ins.op);
      EXPECT_EQ(x.control, core::is_control(ins.op));
      EXPECT_EQ(x.dma, isa::is_dma(ins.op));
      EXPECT_EQ(x.ports, x.control || x.dma ? 0 : core::shared_ports(ins, spec.ports));
      EXPECT_EQ(x.flops, core::tensor_flops(ins, spec));
      EXPECT_EQ(x.num_waits, ins.waits.size());
      EXPECT_EQ(x.num_signals, ins.signals.size());
      // Waits and signals as the sequencers read them (in the record or the program's arrays).
      EXPECT_TRUE(std::ranges::equal(tp.waits(x), ins.waits));
      EXPECT_TRUE(std::ranges::equal(tp.signals(x), ins.signals));
      // One past the highest byte touched in a partition, over the SBUF / PSUM operands.
      int64_t sbuf_end = 0, psum_end = 0;
      for (int k = 0; k < ins.num_operands; ++k) {
        const isa::AccessPattern& ap = ins.operands[k];
        int64_t last = 0;
        for (int d = 0; d < ap.ndim; ++d)
          last += ap.dims[d].stride > 0 ? (ap.dims[d].size - 1) * ap.dims[d].stride : 0;
        const int64_t end = ap.offset + (last + 1) * ap.dtype.storage_bytes;
        if (ap.space == isa::Space::kSbuf) sbuf_end = std::max(sbuf_end, end);
        if (ap.space == isa::Space::kPsum) psum_end = std::max(psum_end, end);
      }
      EXPECT_EQ(x.sbuf_end, sbuf_end);
      EXPECT_EQ(x.psum_end, psum_end);
    }
}

TEST(TimingPricing, EveryExampleKernelPricedAsAlone) {
  for (const std::string& g : kernel_test::kGenerations)
    for (const auto& [name, args] : kernel_test::kSmallExamples) {
      SCOPED_TRACE(g + " " + name);
      expect_priced_alone(examples::build_kernel(name, chip(g), args), chip(g).core);
    }
}

// Neighbours that differ in one priced field only: the comparison must see each difference.
TEST(TimingPricing, NeighboursDifferingInOneFieldArePricedApart) {
  const arch::ChipSpec& c = chip("trn1");
  isa::Program p;
  p.num_semaphores = 1;
  auto sb = [](num::Format f, int64_t n, int64_t stride = 1, int32_t parts = 128) {
    isa::AccessPattern ap;
    ap.space = isa::Space::kSbuf;
    ap.dtype = f;
    ap.num_partitions = parts;
    ap.ndim = 1;
    ap.dims[0] = {stride, n};
    return ap;
  };
  auto copy = [&](isa::AccessPattern dst, isa::AccessPattern src, int64_t offset) {
    isa::Instruction ins;
    ins.op = isa::Opcode::kTensorCopy;
    ins.engine = isa::Engine::kVector;
    ins.num_operands = 2;
    dst.offset = offset;
    ins.operands[0] = dst;
    ins.operands[1] = src;
    p.append(ins);
  };
  copy(sb(num::fp32(), 512), sb(num::fp32(), 512), 0);
  copy(sb(num::fp32(), 512), sb(num::fp32(), 512), 4096);        // offset only: shared
  copy(sb(num::bf16(), 512), sb(num::bf16(), 512), 0);           // dtype
  copy(sb(num::bf16(), 1024), sb(num::bf16(), 1024), 0);         // size
  copy(sb(num::bf16(), 1024), sb(num::bf16(), 1024, 2), 0);      // stride
  copy(sb(num::bf16(), 1024, 1, 64), sb(num::bf16(), 1024), 0);  // partitions
  expect_priced_alone(p, c.core);
  // The size change shows in the cost, so sharing across it would have been caught.
  const core::TimingProgram tp(p, c.core);
  const auto& info = tp.info(isa::Engine::kVector);
  EXPECT_EQ(info[0].cost.ii, info[1].cost.ii);
  EXPECT_NE(info[2].cost.ii, info[3].cost.ii);
}

}  // namespace
}  // namespace trnsim
