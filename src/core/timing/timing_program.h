// A program prepared for the timing model: every static instruction's cost, shared-port use,
// DMA plan, FLOPs and on-chip footprint, computed once (cost functions are pure), so that a
// loop body executed a million times costs a table lookup per instruction, not a re-derivation.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "arch/core_spec.h"
#include "base/large_allocator.h"
#include "core/cost/cost.h"
#include "core/dma/dma_plan.h"
#include "isa/program.h"

namespace trnsim::core {

// Who signals each semaphore (TimingProgram::sem_producers): bit e for engine e's instructions,
// kDmaProducer for DMA transfers' completions (sendrecv included); how a wait is classified
// (Stall).
inline constexpr uint8_t kDmaProducer = 1u << isa::kNumEngines;

// Shared SBUF/PSUM ports that generations without enough ports arbitrate (HARDWARE.md s3):
// bits of InstrInfo::ports.
enum PortBit : uint8_t {
  kPortVectorGpSimdSbuf = 1u << 0,  // NC-v2: Vector and GpSimd cannot access SBUF at once
  kPortVectorScalarPsum = 1u << 1,  // NC-v2: Vector and Scalar cannot access PSUM at once
};
inline constexpr int kNumSharedPorts = 2;

// What the sequencers read per executed instruction, kept apart from isa::Instruction (close
// to 1 KB with its operands) so that the issue loop touches a few cache lines, not the whole
// instruction. A single wait or signal (nearly every instruction has at most one of each) is
// kept in the record, read with it; more go to flat arrays of the TimingProgram.
// How far back in an engine's stream a read-after-write is looked for: farther producers have
// retired long before (an engine has a few instructions in flight: latency / ii).
inline constexpr int kRawWindow = 8;

struct InstrInfo {
  Cost cost;
  isa::Opcode op = isa::Opcode::kNop;
  bool control = false;    // semaphore, register and branch instructions (resolved by sequencers)
  bool dma = false;        // handed to the DMA engines
  bool registers = false;  // reads registers at issue (dynamic operands, reg_store)
  uint8_t ports = 0;       // PortBit mask held while the instruction streams (its ii)
  // In-engine read after write: this instruction reads on-chip bytes that the instruction
  // `raw_back` places earlier in its stream (1..kRawWindow) wrote, so it issues no sooner
  // than that one retires (Sequencer). 0: no such producer in the window.
  uint8_t raw_back = 0;
  uint16_t num_waits = 0, num_signals = 0;
  uint32_t waits = 0, signals = 0;  // first index into TimingProgram's wait / signal arrays
  isa::SemWait wait;                // the wait when num_waits == 1
  isa::SemSignal signal;            // the signal when num_signals == 1
  int32_t dma_plan = -1;            // index into TimingProgram's DMA plans (shared by equal shapes)
  double flops = 0;                 // TensorE multiply-accumulate FLOPs
  int64_t sbuf_end = 0;             // one past the highest SBUF byte touched in a partition
  int64_t psum_end = 0;             // the same for PSUM
};

// Per-instruction records and flat arrays as long as the program (base/large_allocator.h).
template <class T>
using LargeVector = std::vector<T, LargeAllocator<T>>;

class TimingProgram {
 public:
  TimingProgram(const isa::Program& program, const arch::CoreSpec& spec);

  const isa::Program& program() const { return program_; }
  const isa::Stream& stream(isa::Engine e) const { return program_.stream(e); }
  const LargeVector<InstrInfo>& info(isa::Engine e) const { return info_[static_cast<size_t>(e)]; }
  const DmaPlan& dma_plan(int32_t i) const { return dma_plans_[static_cast<size_t>(i)]; }
  // Spans into `x` itself or into the program's arrays: valid as long as both are.
  std::span<const isa::SemWait> waits(const InstrInfo& x) const {
    if (x.num_waits == 1) return {&x.wait, 1};
    return {waits_.data() + x.waits, x.num_waits};
  }
  std::span<const isa::SemSignal> signals(const InstrInfo& x) const {
    if (x.num_signals == 1) return {&x.signal, 1};
    return {signals_.data() + x.signals, x.num_signals};
  }
  // True when every DMA of the program spreads over all the core's engines in equal pieces
  // (one per engine, same bytes and HBM endpoints): then every engine receives the same
  // sequence of pieces on the same queues, they behave identically, and the DMA engines can
  // simulate one engine for all (dma_engines.h). Most kernels move whole 128-partition tiles.
  bool dma_engines_symmetric() const { return dma_symmetric_; }
  int num_semaphores() const { return num_semaphores_; }
  // Per semaphore, who signals it (kDmaProducer and engine bits), found in the same pass.
  const std::vector<uint8_t>& sem_producers() const { return sem_producers_; }
  // No signal lowers a semaphore (every delta >= 0): see timing_semaphores.h.
  bool semaphores_monotone() const { return semaphores_monotone_; }
  int num_registers(isa::Engine e) const { return num_registers_[static_cast<size_t>(e)]; }

 private:
  const isa::Program& program_;
  std::array<LargeVector<InstrInfo>, isa::kNumEngines> info_;
  std::vector<DmaPlan> dma_plans_;
  LargeVector<isa::SemWait> waits_;
  LargeVector<isa::SemSignal> signals_;
  bool dma_symmetric_ = true;
  int num_semaphores_ = 0;
  std::vector<uint8_t> sem_producers_;
  bool semaphores_monotone_ = true;
  std::array<int, isa::kNumEngines> num_registers_{};
};

// Which shared ports `ins` holds on its engine under `ports` (none when the spec has no
// conflict: the rule is data, not a generation check).
uint8_t shared_ports(const isa::Instruction& ins, const arch::PortSpec& ports);

}  // namespace trnsim::core
