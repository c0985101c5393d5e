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
  const int hbm_sides = int{dst_hbm} + int{src_hbm};

  // Throughput of special transfers (HARDWARE.md s4).
  if (ins.op == isa::Opcode::kDmaTranspose) {
    plan.throughput_percent = static_cast<int32_t>(src_hbm ? costk::kDmaTransposeHbmPercent
                                                           : costk::kDmaTransposeSbufPercent);
  } else if (ins.p.dma_accumulate && !spec.features.near_memory_accumulation) {
    plan.throughput_percent = static_cast<int32_t>(costk::kDmaAccumulateLegacyPercent);
  }

  const isa::AccessPattern& split = !dst_hbm ? dst : !src_hbm ? src : dst;
  const int64_t rows = std::max<int64_t>(split.num_partitions, 1);
  const int64_t total = std::max(operand_bytes(dst), operand_bytes(src));
  const int64_t first_group =
      split.space == isa::Space::kHbm ? 0 : split.start_partition / per_engine;
  // Pieces of `per_engine` rows, at most one per engine (longer HBM row lists share out evenly).
  const int64_t pieces = std::min<int64_t>(engines, (rows + per_engine - 1) / per_engine);
  const int64_t rows_per_piece = (rows + pieces - 1) / pieces;
  // Integer divisions dominate this per-instruction cost: one per piece at most, none when the
  // rows split the bytes evenly (the common case).
  const int64_t per_row = total / rows;
  const bool even = per_row * rows == total;
  plan.pieces.reserve(static_cast<size_t>(pieces));
  int64_t engine = (first_group + rotate) % engines, before = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += rows_per_piece) {
    const int64_t r1 = std::min(rows, r0 + rows_per_piece);
    const int64_t upto = even ? per_row * r1 : total * r1 / rows;  // exact split of the total
    DmaPiece piece;
    piece.engine = static_cast<int32_t>(engine);
    piece.rows = static_cast<int32_t>(r1 - r0);
    piece.bytes = upto - before;
    piece.hbm_sides = hbm_sides;
    plan.pieces.push_back(piece);
    before = upto;
    if (++engine == engines) engine = 0;
  }
  return plan;
}

}  // namespace trnsim::core
