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
  int32_t engine = 0;     // DMA engine of the core
  int32_t rows = 0;       // partitions (or HBM rows) the piece moves
  int64_t bytes = 0;      // bytes the engine streams: the larger of its read and write sizes
  int32_t hbm_sides = 0;  // endpoints in HBM (0, 1 or 2): its weight in the HBM share
};

struct DmaPlan {
  int32_t queue = 0;                 // queue id on every engine it uses (DMA-OV)
  int32_t throughput_percent = 100;  // share of the engine bandwidth the transfer achieves
  int64_t hbm_read_bytes = 0;
  int64_t hbm_write_bytes = 0;
  std::vector<DmaPiece> pieces;  // in engine order of the partitions
};

// The instruction's `dma_queue` (0 .. engines x queues_per_engine - 1) names queue
// dma_queue % queues_per_engine, and dma_queue / queues_per_engine rotates which engine takes
// the first piece (so single-engine transfers can be placed on any engine).
DmaPlan plan_dma(const isa::Instruction& ins, const arch::CoreSpec& spec);

}  // namespace trnsim::core
