// The seam between timing and values (timing side). The timing model decides WHEN an instruction
// executes; an InstructionExecutor decides WHAT it does to memory. In functional + timing mode the
// timing model calls execute() once per executed instruction, at its completion time and
// before its semaphore signals apply, in simulated-time order (so a consumer that waited on the
// signal sees the producer's values); in timing-only mode (shapes without data) no executor is
// attached. Functional-only runs do not use the timing model at all.
#pragma once

#include <cstdint>

#include "isa/engine.h"
#include "isa/instruction.h"

namespace trnsim::core {

enum class RunMode : uint8_t {
  kFunctionalTiming,  // values and time (default for kernels)
  kTimingOnly,        // time only: shapes without data, for large workloads
  kFunctionalOnly,    // values only, no timing model
};

class InstructionExecutor {
 public:
  virtual ~InstructionExecutor() = default;
  // `id` is the instruction's issue number on its engine (0, 1, 2, ... per engine), the same
  // numbering mem::Fault::instruction_id uses. Control instructions (semaphores, registers,
  // branches) are resolved by the timing model's sequencers and are not passed here.
  virtual void execute(const isa::Instruction& ins, isa::Engine engine, uint64_t id) = 0;
  // A register a reg_load just wrote: the sequencer takes it over at the reg_load's completion,
  // since the loop conditions and dynamic addresses it resolves at issue read it.
  virtual int32_t register_value(isa::Engine engine, int reg) = 0;
};

}  // namespace trnsim::core
