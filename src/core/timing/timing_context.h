// What the components of one simulated NeuronCore share: the spec, the prepared program, the
// event kernel (shared with the other cores of a chip-level run), semaphores, shared ports,
// the optional value executor and trace, the cross-core group, and the statistics they add to.
// Components (the five sequencers, the DMA engines) talk only through this state and timed events
// (STYLE.md 9), so a run is a pure function of its inputs.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "arch/chip_spec.h"
#include "core/timing/timing_executor.h"
#include "core/timing/timing_ports.h"
#include "core/timing/timing_program.h"
#include "core/timing/timing_result.h"
#include "core/timing/timing_semaphores.h"
#include "mem/fault.h"
#include "sim/simulator.h"

namespace trnsim::core {

class Sequencer;
class DmaEngines;
class TimingTrace;
class TimingPath;
class CrossCore;

// Event priorities at equal time: state changes (completions, signals) before issue attempts,
// so an instruction waiting for a signal applied at t issues at t ("legal at t"). Issue
// attempts at equal time run in (core, engine) order (issue_priority), not in the order they
// were scheduled: which engine goes first at a tie (a DMA queue's order, a shared port) is then
// a fixed rule, and it does not depend on how many times, or when, a sequencer was woken
// before (timing_semaphores.h wakes a waiting sequencer only when its wait holds).
inline constexpr int32_t kPriorityComplete = 0;
inline constexpr int32_t kPriorityIssue = 1;
inline int32_t issue_priority(int core, int engine) {
  return kPriorityIssue + core * isa::kNumEngines + engine;
}

struct TimingContext {
  TimingContext(const arch::ChipSpec& c, const TimingProgram& p, sim::Simulator& s)
      : chip(c), spec(c.core), prog(p), sim(s), sems(p.num_semaphores(), p.semaphores_monotone()) {}

  const arch::ChipSpec& chip;
  const arch::CoreSpec& spec;
  const TimingProgram& prog;
  sim::Simulator& sim;
  Semaphores sems;
  SharedPorts ports;
  InstructionExecutor* executor = nullptr;  // functional + timing mode only
  TimingTrace* trace = nullptr;             // when profiling
  TimingPath* path = nullptr;               // when following the critical path
  std::array<Sequencer*, isa::kNumEngines> seq{};
  DmaEngines* dma = nullptr;
  CrossCore* cross = nullptr;  // the other cores of the logical core (null: a single-core run)
  int core = 0;                // this core's rank in its group

  TimingResult result;
  uint64_t executed = 0;
  uint64_t max_instructions = 0;
  bool stopped = false;  // a fault ended the run (step limit)

  // Applies an instruction's signals at `now` and wakes the sequencers that waited on them.
  void apply_signals(std::span<const isa::SemSignal> signals, Picoseconds now);
  // Whether signals of instructions that retire at a known time may be recorded ahead
  // (timing_semaphores.h): timing only (no executor to run at completion), monotone counters.
  bool defers_signals() const { return executor == nullptr && defer_signals && sems.defers(); }
  // Records signals that apply at `t` (an instruction's retirement), seen at `now`.
  void defer(std::span<const isa::SemSignal> signals, Picoseconds t, Picoseconds now);
  // Off: every completion with signals is an event (tests compare the two).
  bool defer_signals = true;
  void fault(mem::FaultKind kind, const isa::Instruction& ins, isa::Engine e, uint64_t id,
             std::string message);
};

}  // namespace trnsim::core
