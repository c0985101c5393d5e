// Sequencer instructions: semaphores, scalar registers, branches and DMA triggers. They use no
// datapath. A DMA trigger with hardware descriptor generation costs the published DGE time on
// the issuing sequencer (~600 ns on NC-v3, HARDWARE.md s4 "DGE"); without DGE (NC-v2:
// descriptors are prebuilt in HBM) a trigger is one sequencer cycle like any control op. An
// indirect DMA's descriptors come from software DGE on GpSimd (costk::kSwdgeInstructionNs), and
// so do a register-relative DMA's on a generation without hardware DGE.
#include <algorithm>
#include <cmath>

#include "core/cost/cost.h"
#include "core/cost/cost_constants.h"
#include "isa/op_table.h"

namespace trnsim::core {

double engine_clock_ghz(const arch::CoreSpec& spec, isa::Engine engine) {
  switch (engine) {
    case isa::Engine::kTensor:
      return spec.tensor.clock_ghz;
    case isa::Engine::kVector:
      return spec.vector.clock_ghz;
    case isa::Engine::kScalar:
      return spec.scalar.clock_ghz;
    case isa::Engine::kGpSimd:
      return spec.gpsimd.clock_ghz;
    case isa::Engine::kSync:
      return spec.sync.clock_ghz;
  }
  return spec.sync.clock_ghz;
}

bool is_control(isa::Opcode op) {
  switch (op) {
    case isa::Opcode::kNop:
    case isa::Opcode::kSemWait:
    case isa::Opcode::kSemSignal:
    case isa::Opcode::kRegSet:
    case isa::Opcode::kRegAlu:
    case isa::Opcode::kBranch:
    case isa::Opcode::kCoreBarrier:
      return true;
    default:
      return false;
  }
}

uint64_t control_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  // Descriptors made at run time in software: an indirect DMA's, and a register-relative DMA's
  // where the generation has no hardware DGE (NC-v2: nisa.dge_mode.swdge).
  const bool software_dge =
      ins.op == isa::Opcode::kDmaGather || ins.op == isa::Opcode::kDmaScatter ||
      (isa::is_dma(ins.op) && spec.dma.hwdge_per_core == 0 && isa::has_dynamic_operand(ins));
  if (software_dge) {
    // Software DGE: GpSimd makes the descriptors (costk::kSwdgeInstructionNs says what is
    // assumed), rounded up to whole cycles of the issuing engine.
    const double cycles =
        std::ceil(costk::kSwdgeInstructionNs * engine_clock_ghz(spec, ins.engine));
    return std::max<uint64_t>(static_cast<uint64_t>(cycles), costk::kControlCycles);
  }
  if (isa::is_dma(ins.op) && spec.dma.hwdge_per_core > 0 && spec.dma.dge_instruction_ns) {
    // ns x GHz = cycles; rounded up to whole cycles of the issuing engine.
    const double cycles =
        std::ceil(*spec.dma.dge_instruction_ns * engine_clock_ghz(spec, ins.engine));
    return cycles >= 1.0 ? static_cast<uint64_t>(cycles) : costk::kControlCycles;
  }
  return costk::kControlCycles;
}

}  // namespace trnsim::core
