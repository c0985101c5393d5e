// Feeds the generic trace recorder (profile/trace.h) from the timing model: one track per
// engine (plus TensorE's background LoadStationary unit) and one per DMA engine queue in use,
// one label per static instruction (mnemonic, name, operands, waits, signals, cost), created
// before the run so the hot path records four integers per executed instruction.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/timing/timing_program.h"
#include "profile/trace.h"

namespace trnsim::core {

class TimingTrace {
 public:
  TimingTrace(profile::Trace& trace, const TimingProgram& prog, const arch::CoreSpec& spec,
              int core_index);

  void on_issue(isa::Engine e, Unit unit, size_t index, Picoseconds start, Picoseconds end) {
    const auto ei = static_cast<size_t>(e);
    trace_.record(tracks_[ei][static_cast<size_t>(unit)], start, end,
                  label_base_[ei] + static_cast<uint32_t>(index));
  }
  // A DMA piece on `dma_engine`'s queue `queue`, part of `ins` triggered by `trigger`.
  void on_piece(int dma_engine, int queue, const isa::Instruction& ins, isa::Engine trigger,
                Picoseconds start, Picoseconds end);

 private:
  profile::Trace& trace_;
  const TimingProgram& prog_;
  const int queues_;
  const std::string process_;
  std::array<std::array<uint32_t, kNumUnits>, isa::kNumEngines> tracks_{};
  std::array<uint32_t, isa::kNumEngines> label_base_{};
  std::vector<int64_t> dma_tracks_;  // engine * queues + queue -> track, -1 until first used
};

// "sbuf[0:128]+0x40 bf16 [4x512]": where an operand is, its dtype and free sizes.
std::string describe_operand(const isa::AccessPattern& ap);
// The label of one static instruction.
profile::Label instruction_label_for_trace(const isa::Instruction& ins, const InstrInfo& info,
                                           size_t index);

}  // namespace trnsim::core
