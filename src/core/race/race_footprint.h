// The bytes an instruction touches, exactly, for the race checker, as rectangles: a run of
// contiguous bytes in a range of partitions (SBUF, PSUM: every active partition uses the same
// free pattern, HARDWARE.md s3) or of device addresses (HBM), read or written, and for a DMA
// the ring (DMA engine and queue) whose piece moves those bytes (core/dma/dma_plan.h).
#pragma once

#include <cstdint>
#include <vector>

#include "arch/core_spec.h"
#include "isa/instruction.h"

namespace trnsim::core {

struct ByteRect {
  isa::Space space = isa::Space::kSbuf;
  bool write = false;
  int32_t part_first = 0, part_last = 0;  // partitions; 0, 0 in HBM
  int64_t lo = 0, hi = 0;                 // bytes [lo, hi): in the partition, or addresses
  int32_t ring = -1;                      // DMA: engine x queues_per_engine + queue; else -1
  uint32_t node = 0;                      // the executed instruction (the caller's numbering)
};

// Appends the rectangles of every operand of `in`, with node 0. Returns false, appending
// nothing, when an operand names more than `max_elements` elements per partition.
bool footprint(const isa::Instruction& in, const arch::CoreSpec& core, int64_t max_elements,
               std::vector<ByteRect>& out);

// The same bytes without the rings, merged: what the pairwise sweep compares (a DMA's pieces
// become one rectangle again), with the rings looked up only where a barrier may order.
std::vector<ByteRect> without_rings(std::vector<ByteRect> rects);

}  // namespace trnsim::core
