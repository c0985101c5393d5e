// Which of the core's DMA engines one transfer's pieces occupy (HARDWARE.md s4, DMA-OV): the
// transfer splits by partition of its SBUF side, `partitions / engines` partitions (8) per
// engine, starting at the engine group of its first partition (an HBM-only transfer: group 0),
// at most one piece per engine. core/dma/dma_plan.cc times the pieces; kernel/builder.cc
// orders transfers by it (two transfers on the same engines of one queue complete in order).
#pragma once

#include <algorithm>
#include <cstdint>

#include "arch/core_spec.h"

namespace trnsim::isa {

struct DmaEngineSpan {
  int64_t first_group = 0;  // engine of the first piece, before the queue's rotation
  int64_t pieces = 1;       // consecutive engines used (mod the engine count)
  int64_t rows_per_engine = 1;
};

inline DmaEngineSpan dma_engine_span(bool split_in_hbm, int64_t split_start, int64_t split_rows,
                                     const arch::CoreSpec& spec) {
  const int64_t engines = std::max(spec.dma.engines, 1);
  DmaEngineSpan s;
  s.rows_per_engine = std::max<int64_t>(spec.sbuf.partitions / engines, 1);  // 128 / 16 = 8
  s.first_group = split_in_hbm ? 0 : split_start / s.rows_per_engine;
  const int64_t rows = std::max<int64_t>(split_rows, 1);
  s.pieces = std::min(engines, (rows + s.rows_per_engine - 1) / s.rows_per_engine);
  return s;
}

}  // namespace trnsim::isa
