// Picks the op family's cost function and composes ii and latency (see cost.h).
#include "core/cost/cost.h"

#include <algorithm>

#include "core/cost/cost_constants.h"
#include "isa/op_table.h"

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

// Cycles from the end of streaming to the results being visible (cost.h). GpSimd's
// GPSIMD_START is inside its `ii`. VectorE and ScalarE pay the static overhead; their ~60-cycle
// access setup is "typically partly hidden" (AG2) and is not added: a dependent VectorE chain
// of fp32 2N ops on hardware shows ~100 cycles per step (docs/timing.md, fused Mamba).
// TensorE, whose pipeline latency is not public (HARDWARE.md s11 item 2), pays both.
uint64_t fixed_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  switch (ins.engine) {
    case isa::Engine::kGpSimd:
      return 0;
    case isa::Engine::kVector:
    case isa::Engine::kScalar:
      return static_cast<uint64_t>(spec.cost.static_overhead_cycles);
    default:
      return static_cast<uint64_t>(spec.cost.static_overhead_cycles +
                                   spec.cost.sbuf_access_setup_cycles);
  }
}

}  // namespace

Cost instruction_cost(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  Cost c;
  if (ins.op == isa::Opcode::kRegLoad || ins.op == isa::Opcode::kRegStore) {
    c.ii = c.latency = costk::kRegisterMemoryCycles;
    return c;
  }
  if (is_control(ins.op) || isa::is_dma(ins.op)) {
    // A DMA trigger's own latency is its issue cost; the transfer is timed by the DMA model.
    c.ii = c.latency = std::max<uint64_t>(control_cycles(ins, spec), 1);
    return c;
  }
  const uint64_t cycles = std::max<uint64_t>(datapath_cycles(ins, spec), 1);
  c.ii = cycles;
  c.latency = cycles + fixed_cycles(ins, spec);
  if (ins.engine == isa::Engine::kVector || ins.engine == isa::Engine::kScalar) {
    // A RAW-dependent successor starts no sooner than the measured turnaround (cost.h).
    if (spec.cost.act_dependent_ii_cycles)
      c.latency =
          std::max<uint64_t>(c.latency, static_cast<uint64_t>(*spec.cost.act_dependent_ii_cycles));
  }
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
  if (isa::has_dynamic_operand(ins)) {
    c.ii = std::max(c.ii, costk::kMinIiDynamic);
    c.latency = std::max(c.latency, c.ii + fixed_cycles(ins, spec));
  }
  return c;
}

}  // namespace trnsim::core
