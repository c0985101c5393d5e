// Picks the op family's cost function and composes ii and latency (see cost.h).
#include "core/cost.h"

#include <algorithm>

#include "core/cost_constants.h"

namespace trnsim::core {

namespace {

uint64_t datapath_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  switch (ins.engine) {
    case isa::Engine::kTensor:
      return tensor_cycles(ins, spec);
    case isa::Engine::kVector:
      return vector_cycles(ins, spec);
    case isa::Engine::kScalar:
      return scalar_cycles(ins, spec);
    case isa::Engine::kGpSimd:
      return gpsimd_cycles(ins, spec);
    case isa::Engine::kSync:
      return costk::kControlCycles;  // SP has no datapath (s2)
  }
  return costk::kControlCycles;
}

}  // namespace

Cost instruction_cost(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  Cost c;
  if (is_control(ins.op) || is_dma(ins.op)) {
    // A DMA trigger's own latency is its issue cost; the transfer is timed by the DMA model.
    c.ii = c.latency = std::max<uint64_t>(control_cycles(ins, spec), 1);
    return c;
  }
  const uint64_t cycles = std::max<uint64_t>(datapath_cycles(ins, spec), 1);
  // GpSimd's GPSIMD_START is its fixed cost; the other engines pay the static overhead and
  // the SBUF/PSUM access setup on top of their streaming cycles (cost.h).
  const uint64_t fixed = ins.engine == isa::Engine::kGpSimd
                             ? 0
                             : static_cast<uint64_t>(spec.cost.static_overhead_cycles +
                                                     spec.cost.sbuf_access_setup_cycles);
  c.ii = cycles;
  c.latency = cycles + fixed;
  switch (ins.op) {
    case isa::Opcode::kLoadStationary:
      c.unit = Unit::kBackground;
      break;
    case isa::Opcode::kMultiplyMoving:
    case isa::Opcode::kMatmulMx:
      c.waits_background = true;
      break;
    case isa::Opcode::kTransposePe:
      if (spec.features.background_transpose)
        c.ii = std::max<uint64_t>(1, (cycles + costk::kBackgroundTransposeOverlap - 1) /
                                         costk::kBackgroundTransposeOverlap);
      break;
    default:
      break;
  }
  return c;
}

}  // namespace trnsim::core
