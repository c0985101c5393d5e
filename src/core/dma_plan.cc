#include "core/dma_plan.h"

#include <algorithm>

#include "core/cost_constants.h"

namespace trnsim::core {

namespace {

int64_t operand_bytes(const isa::AccessPattern& ap) {
  return ap.elements() * static_cast<int64_t>(ap.dtype.storage_bytes);
}

// Operand slots of dma_copy / dma_transpose in the op table: dst, src.
constexpr int kDstSlot = 0;
constexpr int kSrcSlot = 1;

}  // namespace

DmaPlan plan_dma(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  DmaPlan plan;
  if (ins.num_operands <= kSrcSlot) return plan;
  const isa::AccessPattern& dst = ins.operands[kDstSlot];
  const isa::AccessPattern& src = ins.operands[kSrcSlot];
  const int engines = std::max(spec.dma.engines, 1);
  const int queues = std::max(spec.dma.queues_per_engine, 1);
  const int per_engine = std::max(spec.sbuf.partitions / engines, 1);  // 128 / 16 = 8 (DMA-OV)
  plan.queue = ins.p.dma_queue % queues;
  const int rotate = ins.p.dma_queue / queues;

  const bool dst_hbm = dst.space == isa::Space::kHbm, src_hbm = src.space == isa::Space::kHbm;
  if (src_hbm) plan.hbm_read_bytes = operand_bytes(src);
  if (dst_hbm) plan.hbm_write_bytes = operand_bytes(dst);
  plan.hbm_sides = int{dst_hbm} + int{src_hbm};

  // Throughput of special transfers (HARDWARE.md s4).
  if (ins.op == isa::Opcode::kDmaTranspose) {
    plan.throughput_percent = static_cast<int32_t>(src_hbm ? costk::kDmaTransposeHbmPercent
                                                           : costk::kDmaTransposeSbufPercent);
  } else if (ins.p.dma_accumulate && !spec.features.near_memory_accumulation) {
    plan.throughput_percent = static_cast<int32_t>(costk::kDmaAccumulateLegacyPercent);
  }

  const isa::AccessPattern& split = !dst_hbm ? dst : !src_hbm ? src : dst;
  plan.rows = std::max<int64_t>(split.num_partitions, 1);
  plan.total_bytes = std::max(operand_bytes(dst), operand_bytes(src));
  const int64_t first_group =
      split.space == isa::Space::kHbm ? 0 : split.start_partition / per_engine;
  // Pieces of `per_engine` rows, at most one per engine (longer HBM row lists share out evenly).
  const int64_t pieces = std::min<int64_t>(engines, (plan.rows + per_engine - 1) / per_engine);
  plan.rows_per_piece = (plan.rows + pieces - 1) / pieces;
  plan.num_pieces =
      static_cast<int32_t>((plan.rows + plan.rows_per_piece - 1) / plan.rows_per_piece);
  plan.engines = engines;
  if (plan.total_bytes % plan.rows == 0) plan.bytes_per_row = plan.total_bytes / plan.rows;
  plan.first_engine = static_cast<int32_t>((first_group + rotate) % engines);
  return plan;
}

DmaPiece DmaPlan::piece(int32_t k) const {
  const int64_t r0 = k * rows_per_piece, r1 = std::min(rows, r0 + rows_per_piece);
  DmaPiece p;
  p.engine = first_engine + k < engines ? first_engine + k : (first_engine + k) % engines;
  p.rows = static_cast<int32_t>(r1 - r0);
  // The exact split of the total by rows; no division when the rows split it evenly.
  p.bytes = bytes_per_row >= 0 ? bytes_per_row * (r1 - r0)
                               : total_bytes * r1 / rows - total_bytes * r0 / rows;
  p.hbm_sides = hbm_sides;
  return p;
}

}  // namespace trnsim::core
