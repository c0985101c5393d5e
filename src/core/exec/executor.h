// The functional executor: the values half of an instruction (ARCHITECTURE.md: semantics and
// cost are separate functions of one instruction). It owns one NeuronCore's SBUF, PSUM, PE
// array state, scalar registers and VectorE accumulators, and shares the device HBM. The
// functional runner calls it for every instruction in program order; the timing model calls it
// at each instruction's execution point (core/timing/timing_executor.h). It knows nothing about
// time, queues or semaphores.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "arch/core_spec.h"
#include "core/exec/exec_options.h"
#include "core/exec/exec_state.h"
#include "core/timing/timing_executor.h"
#include "isa/engine.h"
#include "isa/instruction.h"
#include "mem/fault.h"
#include "mem/hbm.h"

namespace trnsim::core {

class ExecContext;

struct ExecResult {
  bool ok = true;               // false: a fault was recorded and the instruction wrote nothing
  std::optional<int32_t> jump;  // a taken branch: the next instruction index in the stream
};

class Executor {
 public:
  Executor(const arch::CoreSpec& core, const ExecOptions& opts, mem::Hbm& hbm);

  // Executes the data semantics of `in` on `engine`. `instruction_id` is the engine's issue
  // number (see sr_stream in exec_options.h): it keys stochastic rounding and names the
  // instruction in faults. Never throws for a program error; faults go to faults().
  ExecResult execute(const isa::Instruction& in, isa::Engine engine, uint64_t instruction_id);

  mem::CoreMemory& memory() { return st_.memory; }
  const mem::CoreMemory& memory() const { return st_.memory; }
  const mem::FaultList& faults() const { return st_.faults; }
  mem::FaultList& faults() { return st_.faults; }
  RegisterFile& registers(isa::Engine e) { return st_.regs[static_cast<size_t>(e)]; }
  // Register `reg` of engine `e`, 0 when it does not exist (InstructionExecutor's).
  int32_t register_value(isa::Engine e, int reg) {
    const RegisterFile& r = registers(e);
    return r.valid(reg) ? r.get(reg) : 0;
  }
  PeArray& pe() { return st_.pe; }
  const std::vector<float>& vector_accumulator() const { return st_.vector_accumulator; }
  const arch::CoreSpec& core() const { return st_.core; }
  const ExecOptions& options() const { return st_.opts; }
  ExecState& state() { return st_; }
  const ExecState& state() const { return st_; }

 private:
  // Bounds, engine-space and start-partition rules of every operand; false after a fault.
  bool check_operands(ExecContext& ctx);

  ExecState st_;
};

// An Executor behind the timing model's interface: functional + timing runs.
class TimedExecutor : public InstructionExecutor {
 public:
  explicit TimedExecutor(Executor& exec) : exec_(exec) {}
  void execute(const isa::Instruction& ins, isa::Engine engine, uint64_t id) override {
    exec_.execute(ins, engine, id);
  }
  int32_t register_value(isa::Engine engine, int reg) override {
    return exec_.register_value(engine, reg);
  }

 private:
  Executor& exec_;
};

}  // namespace trnsim::core
