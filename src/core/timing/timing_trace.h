// Feeds the generic trace recorder (profile/trace.h) from the timing model: one track per
// engine (plus TensorE's background LoadStationary unit) and one per DMA engine queue in use,
// one label per static instruction (mnemonic, name, operands, waits, signals, cost), created
// before the run so the hot path records four integers per executed instruction.
// Also, from what it saw, at the end of the run (finish):
//  - flows: a semaphore wait's producer (the instruction or DMA transfer whose signal brought
//    the counter to the value waited for) to the waiting instruction, and a DMA instruction to
//    its transfer's pieces. Not followed: signals of core_barrier and sendrecv (the other
//    cores' business);
//  - counters under the core's process: SBUF and PSUM bytes in use, each DMA queue's depth
//    (transfers handed over and not yet complete) and HBM bandwidth (docs/profile.md says how
//    each is computed).
// It reads the times the sequencers and DMA engines compute and changes none.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/timing/timing_program.h"
#include "profile/trace.h"

namespace trnsim::core {

class TimingTrace {
 public:
  TimingTrace(profile::Trace& trace, const TimingProgram& prog, const arch::CoreSpec& spec,
              int core_index);

  // Instruction `index` of `e` issued at `start` on `unit`, which it holds until `end`; it
  // retires (its signals apply, unless the DMA engines or other cores apply them) at `retire`.
  void on_issue(isa::Engine e, Unit unit, size_t index, Picoseconds start, Picoseconds end,
                Picoseconds retire) {
    const auto ei = static_cast<size_t>(e);
    const uint64_t span = trace_.record(tracks_[ei][static_cast<size_t>(unit)], start, end,
                                        label_base_[ei] + static_cast<uint32_t>(index));
    issue_span_[ei].push_back(span);
    end_ = std::max(end_, retire);
    const InstrInfo& info = prog_.info(e)[index];
    if (info.num_waits != 0 || info.num_signals != 0) note_sync(info, span, start, retire);
  }
  // A DMA piece on `dma_engine`'s queue `queue`, part of `ins`, the DMA instruction that
  // `trigger` issued as its issue number `id`.
  // A DMA the trigger's sequencer resolved at issue (a register-relative operand) is handed to
  // the DMA engines as a copy: `copy` stands for instruction `index` of its stream.
  void on_resolved(const isa::Instruction* copy, uint32_t index) { resolved_[copy] = index; }
  void on_piece(int dma_engine, int queue, const isa::Instruction& ins, isa::Engine trigger,
                uint64_t id, Picoseconds start, Picoseconds end);
  // The run is over: adds the flows and counters to the trace.
  void finish();

 private:
  struct SemWaitRec {
    uint64_t span = 0;
    int64_t value = 0;
    uint16_t sem = 0;
  };
  struct SemSignalRec {
    Picoseconds t;
    uint64_t span = 0;
    int64_t delta = 0;
    uint16_t sem = 0;
  };
  // One DMA instruction's transfer, from its pieces.
  struct TransferRec {
    isa::Engine trigger = isa::Engine::kSync;
    uint32_t index = 0;  // the DMA instruction in the trigger's stream
    uint64_t id = 0;
    Picoseconds first_start{INT64_MAX}, last_end;
    uint64_t last_span = 0;  // the piece that ended last (its completion)
  };

  void note_sync(const InstrInfo& info, uint64_t span, Picoseconds start, Picoseconds retire);
  void add_flows();
  void add_counters();

  profile::Trace& trace_;
  const TimingProgram& prog_;
  const int queues_;
  const std::string process_;
  std::array<std::array<uint32_t, kNumUnits>, isa::kNumEngines> tracks_{};
  std::array<uint32_t, isa::kNumEngines> label_base_{};
  std::vector<int64_t> dma_tracks_;  // engine * queues + queue -> track, -1 until first used
  std::array<std::vector<uint64_t>, isa::kNumEngines> issue_span_;  // by issue number
  std::vector<SemWaitRec> waits_;
  std::vector<SemSignalRec> signals_;
  std::vector<TransferRec> transfers_;
  std::unordered_map<const isa::Instruction*, uint32_t> resolved_;  // on_resolved
  std::unordered_map<uint64_t, uint32_t> transfer_of_;  // id x engines + trigger -> transfers_
  Picoseconds end_;
};

// "sbuf[0:128]+0x40 bf16 [4x512]": where an operand is, its dtype and free sizes.
std::string describe_operand(const isa::AccessPattern& ap);
// The label of one static instruction of `prog`: opcode, engine, stream index, its source
// ("kernel.py:27") and operands with their tile or tensor names where known (isa::Origin).
profile::Label instruction_label_for_trace(const isa::Program& prog, const isa::Instruction& ins,
                                           const InstrInfo& info, size_t index);

}  // namespace trnsim::core
