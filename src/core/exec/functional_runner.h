// Functional-only run of a program (ARCHITECTURE.md: the third run mode): values without time.
// The five engine streams run in order, each instruction issuing once every semaphore wait it
// carries holds; its signals apply as soon as it has executed (a DMA transfer completes
// immediately in functional mode). Scheduling is round-robin over engines, one instruction per
// engine per round, so runs are deterministic; a race-free program gives the same values
// under any schedule, which is what the timing model relies on when it reuses the Executor.
//
// A round in which no stream can issue while some have not finished is a deadlock: one
// kDeadlock fault per blocked stream names its instruction and the semaphore it waits on.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "core/exec/executor.h"
#include "core/exec/hbm_tensor_io.h"
#include "isa/program.h"
#include "mem/hbm.h"

namespace trnsim::core {

struct RunOptions {
  // Instructions executed before the run stops with a kStepLimit fault (a runaway loop).
  uint64_t max_instructions = uint64_t{1} << 32;
  // Stop at the first fault (the faulting instruction wrote nothing). When false, the run
  // carries on and the instruction's signals still apply.
  bool stop_on_fault = true;
};

struct RunResult {
  bool ok = false;  // finished every stream without a fault
  uint64_t instructions = 0;
  std::array<uint64_t, isa::kNumEngines> per_engine{};
};

class FunctionalRunner {
 public:
  // Core geometry, numerics and HBM capacity from the chip; the stochastic-rounding seed is
  // the program's. The runner keeps a reference to `program`, which must outlive it.
  FunctionalRunner(const arch::ChipSpec& chip, const isa::Program& program, RunOptions run = {});
  FunctionalRunner(const arch::CoreSpec& core, const ExecOptions& opts, uint64_t hbm_bytes,
                   const isa::Program& program, RunOptions run = {});

  // Host access to the program's HBM tensors, by name. Throws InputError for an unknown name
  // or a size that does not match the tensor. The _f32 forms cast with round-to-nearest-even.
  void write_tensor(std::string_view name, std::span<const uint8_t> bytes);
  void write_tensor_f32(std::string_view name, std::span<const float> values);
  void write_tensor_f32_range(std::string_view name, int64_t first, std::span<const float> values) {
    io_.write_f32_range(name, first, values);
  }
  std::vector<uint8_t> read_tensor(std::string_view name) const;
  std::vector<float> read_tensor_f32(std::string_view name) const;

  RunResult run();

  Executor& executor() { return exec_; }
  const mem::FaultList& faults() const { return exec_.faults(); }
  int64_t semaphore(int i) const { return sems_.at(static_cast<size_t>(i)); }
  mem::Hbm& hbm() { return hbm_; }

 private:
  bool waits_hold(const isa::Instruction& in) const;
  bool apply_signals(const isa::Instruction& in, isa::Engine e, uint64_t id);
  void report_deadlock();
  void fault(mem::FaultKind kind, const isa::Instruction& in, isa::Engine e, uint64_t id,
             std::string message);

  const isa::Program& program_;
  RunOptions run_;
  mem::Hbm hbm_;
  Executor exec_;
  HbmTensorIo io_;
  std::vector<int64_t> sems_;
  std::array<size_t, isa::kNumEngines> pc_{};
  std::array<uint64_t, isa::kNumEngines> issued_{};
};

}  // namespace trnsim::core
