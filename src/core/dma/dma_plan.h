// How one DMA instruction spreads over the core's DMA engines (HARDWARE.md s4, DMA-OV): the
// transfer is split by partition, 8 partitions per engine (= SBUF partitions / DMA engines), so
// a [4, 4096] load uses one engine and a [128, F] load all 16. Each piece is one transfer on
// one engine's queue. The SBUF side decides the split (an HBM-to-HBM copy splits its rows the
// same way). Pure: a function of the instruction and the spec, computed once per instruction.
#pragma once

#include <cstdint>
#include <vector>

#include "arch/core_spec.h"
#include "isa/instruction.h"

namespace trnsim::core {

struct DmaPiece {
  int32_t engine = 0;       // DMA engine of the core
  int32_t rows = 0;         // partitions (or HBM rows) the piece moves
  int64_t bytes = 0;        // bytes the engine streams: the larger of its read and write sizes
  int64_t descriptors = 0;  // contiguous ranges it moves: each costs the engine a fixed time
  int32_t hbm_sides = 0;    // endpoints in HBM (0, 1 or 2): its weight in the HBM share
  bool gathered = false;    // its HBM side is many separate rows, not one block (DmaShape)
  bool writes_hbm = false;  // its destination is HBM (the core's write cap applies)
};

struct DmaPlan {
  int32_t queue = 0;                 // queue id on every engine it uses (DMA-OV)
  int32_t throughput_percent = 100;  // share of the engine bandwidth the transfer achieves
  int64_t hbm_read_bytes = 0;
  int64_t hbm_write_bytes = 0;
  // The pieces, described rather than listed (a few words per DMA instruction, whatever its
  // size): piece k moves rows [k x rows_per_piece, min(rows, (k + 1) x rows_per_piece)) of
  // `rows`, its share of `total_bytes` split exactly by rows, on engine
  // (first_engine + k) % engines. piece() gives one.
  int32_t num_pieces = 0;
  int32_t first_engine = 0;
  int32_t engines = 1;
  int32_t hbm_sides = 0;
  bool gathered = false;    // DmaShape::hbm_gathered: the core's gathered-rows cap applies
  bool writes_hbm = false;  // the destination is HBM: the core's write cap applies
  int64_t rows = 0;
  int64_t rows_per_piece = 1;
  int64_t total_bytes = 0;
  int64_t bytes_per_row = -1;        // total_bytes / rows when that is exact (else -1)
  int64_t descriptors = 0;           // DmaShape::descriptors, split over the pieces by rows
  int64_t descriptors_per_row = -1;  // descriptors / rows when that is exact (else -1)

  DmaPiece piece(int32_t k) const;
  // Every piece has the same rows and bytes and there is one per engine: the engines are
  // interchangeable for this transfer.
  bool spreads_evenly() const {
    return num_pieces == engines && rows == rows_per_piece * num_pieces && bytes_per_row >= 0 &&
           descriptors % num_pieces == 0;
  }
};

// Everything of a DMA instruction its plan depends on: equal shapes give equal plans, so a
// program's many DMAs that differ only in addresses are planned once (TimingProgram).
struct DmaShape {
  bool has_operands = false;  // dst and src present
  bool transpose = false;     // dma_transpose
  bool accumulate = false;    // dma_accumulate
  isa::Space dst_space = isa::Space::kSbuf, src_space = isa::Space::kSbuf;
  int16_t queue = 0;  // the instruction's dma_queue
  int32_t dst_start_partition = 0, dst_partitions = 0;
  int32_t src_start_partition = 0, src_partitions = 0;
  int64_t dst_bytes = 0, src_bytes = 0;
  // An HBM operand is not one contiguous block: rows with gaps between them, a broadcast or a
  // permuted walk (each row a separate burst of HBM accesses; docs/timing.md "DMA").
  bool hbm_gathered = false;
  // Descriptors the transfer needs: each moves one range that is contiguous on both sides
  // (SBUF ranges end at a partition's end; at most 64 KiB, the descriptor's 16-bit length).
  int64_t descriptors = 0;

  bool operator==(const DmaShape&) const = default;
};
// dma_gather / dma_scatter: their HBM operand is the whole table they index (one row per SBUF
// partition moves), so dma_shape counts the SBUF side's rows and bytes on both sides.
bool is_indirect_dma(isa::Opcode op);
DmaShape dma_shape(const isa::Instruction& ins);

// The instruction's `dma_queue` (0 .. engines x queues_per_engine - 1) names queue
// dma_queue % queues_per_engine, and dma_queue / queues_per_engine rotates which engine takes
// the first piece (so single-engine transfers can be placed on any engine).
DmaPlan plan_dma(const DmaShape& shape, const arch::CoreSpec& spec);
inline DmaPlan plan_dma(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  return plan_dma(dma_shape(ins), spec);
}

}  // namespace trnsim::core
