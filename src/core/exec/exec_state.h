// The state the functional executor keeps between instructions: the core's memories, the PE
// array's stationary tiles, the engines' scalar registers, the fault list, and reusable
// working buffers. Owned by Executor; semantics functions reach it through ExecContext.
#pragma once

#include <array>
#include <vector>

#include "arch/core_spec.h"
#include "core/control/register_file.h"
#include "core/exec/exec_options.h"
#include "core/exec/pe_array.h"
#include "isa/engine.h"
#include "isa/instruction.h"
#include "mem/core_memory.h"
#include "mem/fault.h"
#include "mem/tile.h"
#include "mem/tile_io.h"

namespace trnsim::core {

struct ExecState {
  ExecState(const arch::CoreSpec& c, const ExecOptions& o, mem::Hbm& hbm)
      : core(c),
        opts(o),
        memory(c, hbm),
        vector_accumulator(static_cast<size_t>(c.sbuf.partitions), 0.0f) {}

  arch::CoreSpec core;
  ExecOptions opts;
  mem::CoreMemory memory;
  PeArray pe;
  std::array<RegisterFile, isa::kNumEngines> regs;
  mem::FaultList faults;
  // The VectorE's per-partition FP32 accumulator registers (HARDWARE.md s2.3: shared by
  // exponential, select_reduce, tensor_scalar_cumulative, ...). exponential adds its row sums
  // here; they start at zero.
  std::vector<float> vector_accumulator;
  // The random generators of the engines that have one (VectorE, GpSimd), one per lane
  // (partition): a seed and the number of values drawn since it was set. Empty until an
  // engine first uses it; then every lane starts from the run's seed (ExecOptions::seed).
  struct RngLane {
    uint64_t seed = 0;
    uint64_t drawn = 0;
  };
  std::array<std::vector<RngLane>, isa::kNumEngines> rng;

  // Working buffers, reused across instructions.
  std::array<mem::Tile, isa::kMaxOperands> operand_tiles;
  std::array<mem::Tile, 4> temp_tiles;
  std::array<std::vector<uint8_t>, 4> byte_buffers;
  mem::IoScratch io;
};

}  // namespace trnsim::core
