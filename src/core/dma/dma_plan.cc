#include "core/dma/dma_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

#include "base/error.h"
#include "base/int128.h"
#include "core/cost/cost_constants.h"
#include "isa/dma_span.h"

namespace trnsim::core {

namespace {

int64_t operand_bytes(const isa::AccessPattern& ap) {
  return ap.elements() * static_cast<int64_t>(ap.dtype.storage_bytes);
}

// One contiguous block of device memory: the innermost dim of more than one element is the
// unit-stride run each descriptor moves, and the other dims (the rows too), in whatever order
// the pattern walks them, step exactly over the elements inside the smaller ones. A block
// read in a permuted order (k-cache tiles: partition p takes rows p, 128 + p, ...) has the
// DRAM locality of a block; rows with gaps between them are gathered.
bool dense(const isa::AccessPattern& ap) {
  std::array<std::pair<int64_t, int64_t>, isa::kMaxFreeDims + 1> dims{};  // (stride, size)
  size_t n = 0;
  if (ap.num_partitions > 1) dims[n++] = {ap.partition_stride, ap.num_partitions};
  for (int i = 0; i < ap.ndim; ++i)
    if (ap.dims[i].size > 1) dims[n++] = {ap.dims[i].stride, ap.dims[i].size};
  if (n == 0) return true;
  if (dims[n - 1].first != 1) return false;  // the innermost run
  // By stride, the innermost run last (at most four; an insertion sort, which GCC's array
  // bounds analysis does not misread as std::sort's 16-element threshold).
  for (size_t i = 1; i + 1 < n; ++i)
    for (size_t j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
  int64_t expected = dims[n - 1].second;
  for (size_t i = 0; i + 1 < n; ++i) {
    if (dims[i].first != expected || __builtin_mul_overflow(expected, dims[i].second, &expected))
      return false;
  }
  return true;
}

// The contiguous ranges of a pattern: its innermost unit-stride run, grown over the dims
// outside it while each steps exactly over the run so far (HBM rows back to back count; an
// SBUF range ends with its partition), cut at 64 KiB (a descriptor's 16-bit length, DRV).
int64_t ranges(const isa::AccessPattern& ap) {
  constexpr int64_t kMaxDescriptorBytes = 64 * 1024;
  const int64_t elements = ap.elements(), bytes = ap.dtype.storage_bytes;
  if (elements <= 0 || bytes <= 0) return 0;
  int64_t run = 1;
  int i = ap.ndim - 1;
  while (i >= 0 && ap.dims[i].size == 1) --i;
  if (i >= 0 && ap.dims[i].stride == 1) {
    run = ap.dims[i].size;
    for (--i; i >= 0; --i) {
      if (ap.dims[i].size == 1) continue;
      if (ap.dims[i].stride != run) break;
      run *= ap.dims[i].size;
    }
    if (i < 0 && ap.space == isa::Space::kHbm && ap.num_partitions > 1 &&
        ap.partition_stride == run)
      run *= ap.num_partitions;
  }
  const int64_t run_bytes = std::min(run * bytes, kMaxDescriptorBytes / bytes * bytes);
  return (elements * bytes + run_bytes - 1) / run_bytes;
}

// Operand slots of dma_copy / dma_transpose / dma_gather / dma_scatter in the op table: dst,
// src (the indirect ones' offsets follow).
constexpr int kDstSlot = 0;
constexpr int kSrcSlot = 1;

}  // namespace

bool is_indirect_dma(isa::Opcode op) {
  return op == isa::Opcode::kDmaGather || op == isa::Opcode::kDmaScatter;
}

DmaShape dma_shape(const isa::Instruction& ins) {
  DmaShape s;
  s.transpose = ins.op == isa::Opcode::kDmaTranspose;
  s.accumulate = ins.p.dma_accumulate;
  s.queue = ins.p.dma_queue;
  if (ins.num_operands <= kSrcSlot) return s;
  const isa::AccessPattern& dst = ins.operands[kDstSlot];
  // collective_v lists its metadata (written) before its src.
  const isa::AccessPattern& src =
      ins.operands[ins.op == isa::Opcode::kCollectiveV ? kSrcSlot + 1 : kSrcSlot];
  s.has_operands = true;
  s.dst_space = dst.space;
  s.src_space = src.space;
  s.dst_start_partition = dst.start_partition;
  s.dst_partitions = dst.num_partitions;
  s.src_start_partition = src.start_partition;
  s.src_partitions = src.num_partitions;
  s.dst_bytes = operand_bytes(dst);
  s.src_bytes = operand_bytes(src);
  s.hbm_gathered = (dst.space == isa::Space::kHbm && !dense(dst)) ||
                   (src.space == isa::Space::kHbm && !dense(src));
  // A range must be contiguous on both sides, so at least the larger count. A DMA transpose's
  // published throughput (AG3) is its whole mechanism's, descriptors included.
  if (!s.transpose) s.descriptors = std::max(ranges(dst), ranges(src));
  if (is_indirect_dma(ins.op)) {
    // The HBM operand is the table indexed, not what moves: the transfer moves one row per
    // SBUF partition, so it is planned as a dma_copy of the SBUF side's shape whose HBM side
    // is that many separate rows (gathered, whatever the row numbers turn out to be).
    const bool gather = ins.op == isa::Opcode::kDmaGather;
    const isa::AccessPattern& sbuf = gather ? dst : src;
    const isa::AccessPattern& table = gather ? src : dst;
    const int64_t moved = sbuf.elements() * table.dtype.storage_bytes;
    (gather ? s.src_partitions : s.dst_partitions) = sbuf.num_partitions;
    (gather ? s.src_bytes : s.dst_bytes) = moved;
    s.hbm_gathered = true;
    // One row a partition at least, whatever the table's shape.
    s.descriptors = std::max<int64_t>(ranges(sbuf), sbuf.num_partitions);
  }
  return s;
}

DmaPlan plan_dma(const DmaShape& s, const arch::CoreSpec& spec) {
  DmaPlan plan;
  if (!s.has_operands) return plan;
  const int engines = std::max(spec.dma.engines, 1);
  const int queues = std::max(spec.dma.queues_per_engine, 1);
  // isa::validate rejects such a queue; a program that skipped validation must not index
  // outside the queue tables.
  if (s.queue < 0 || s.queue >= engines * queues)
    throw InputError("dma", "dma_queue",
                     fmt::format("queue={} outside the core's {} DMA queues (run `trnsim check` "
                                 "on the program)",
                                 s.queue, engines * queues));
  plan.queue = s.queue % queues;
  const int rotate = s.queue / queues;

  const bool dst_hbm = s.dst_space == isa::Space::kHbm, src_hbm = s.src_space == isa::Space::kHbm;
  if (src_hbm) plan.hbm_read_bytes = s.src_bytes;
  if (dst_hbm) plan.hbm_write_bytes = s.dst_bytes;
  // A read-modify-write into HBM (a scatter that adds) also reads what it adds to.
  if (dst_hbm && s.accumulate) plan.hbm_read_bytes += s.dst_bytes;
  plan.hbm_sides = int{dst_hbm} + int{src_hbm};
  plan.gathered = s.hbm_gathered;
  plan.writes_hbm = dst_hbm;

  // Throughput of special transfers (HARDWARE.md s4).
  if (s.transpose) {
    plan.throughput_percent = static_cast<int32_t>(src_hbm ? costk::kDmaTransposeHbmPercent
                                                           : costk::kDmaTransposeSbufPercent);
  } else if (s.accumulate && !spec.features.near_memory_accumulation) {
    plan.throughput_percent = static_cast<int32_t>(costk::kDmaAccumulateLegacyPercent);
  }

  // The SBUF side decides the split (dst when both or neither are in HBM).
  const bool split_src = dst_hbm && !src_hbm;
  const isa::Space split_space = split_src ? s.src_space : s.dst_space;
  const int32_t split_start = split_src ? s.src_start_partition : s.dst_start_partition;
  const int32_t split_partitions = split_src ? s.src_partitions : s.dst_partitions;
  plan.rows = std::max<int64_t>(split_partitions, 1);
  plan.total_bytes = std::max(s.dst_bytes, s.src_bytes);
  // Pieces of 8 rows, at most one per engine (longer HBM row lists share out evenly).
  const isa::DmaEngineSpan span =
      isa::dma_engine_span(split_space == isa::Space::kHbm, split_start, split_partitions, spec);
  const int64_t first_group = span.first_group, pieces = span.pieces;
  plan.rows_per_piece = (plan.rows + pieces - 1) / pieces;
  plan.num_pieces =
      static_cast<int32_t>((plan.rows + plan.rows_per_piece - 1) / plan.rows_per_piece);
  plan.engines = engines;
  if (plan.total_bytes % plan.rows == 0) plan.bytes_per_row = plan.total_bytes / plan.rows;
  plan.descriptors = s.descriptors;
  if (plan.descriptors % plan.rows == 0) plan.descriptors_per_row = plan.descriptors / plan.rows;
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
  p.gathered = gathered;
  // Split exactly by rows, like the bytes (in 128 bits: an element-strided walk over many HBM
  // rows can have more descriptors than int64 holds times its rows).
  int64_t d1 = 0;
  if (descriptors_per_row >= 0) {
    p.descriptors = descriptors_per_row * (r1 - r0);
  } else if (!__builtin_mul_overflow(descriptors, r1, &d1)) {
    p.descriptors = d1 / rows - descriptors * r0 / rows;
  } else {
    p.descriptors = static_cast<int64_t>(static_cast<int128>(descriptors) * r1 / rows -
                                         static_cast<int128>(descriptors) * r0 / rows);
  }
  p.writes_hbm = writes_hbm;
  return p;
}

}  // namespace trnsim::core
