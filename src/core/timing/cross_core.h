// The instructions a core cannot complete alone (HARDWARE.md s5, s6): core_barrier and sendrecv
// between the physical cores of a logical core, collective between ranks. A sequencer hands them to
// the CrossCore of its run; the chip layer (chip/core_group.h) implements it over the cores it runs
// side by side on one simulator. A single-core run has none: core_barrier then completes at once (a
// group of one) and sendrecv faults (kPeer).
#pragma once

#include <cstdint>
#include <span>

#include "base/units.h"
#include "core/dma/dma_plan.h"
#include "isa/engine.h"
#include "isa/instruction.h"
#include "profile/critical_path.h"

namespace trnsim::core {

class Sequencer;

// A sendrecv or collective as a core hands it over: what its group needs to start it and, on
// that core, to complete it.
struct PeerCall {
  int core = 0;
  const isa::Instruction* ins = nullptr;
  const DmaPlan* plan = nullptr;
  std::span<const isa::SemSignal> signals;
  isa::Engine trigger = isa::Engine::kSync;
  uint64_t id = 0;
  Picoseconds issued;
  uint32_t path_node = profile::kNoNode;  // its node in the core's dependency graph (if kept)
};

class CrossCore {
 public:
  virtual ~CrossCore() = default;
  // `seq` of core `core` reached a core_barrier and is ready to pass it at `t` (its issue
  // cost paid). The group calls seq.release_barrier(t') once every core has reached its
  // matching barrier.
  virtual void barrier(int core, Sequencer& seq, Picoseconds t) = 0;
  // Core `core` issued sendrecv `ins` (its DMA trigger paid) at `t`. The group starts the
  // transfer when the peer has issued its matching sendrecv, and applies `signals` on this
  // core when both this core's send and its receive are done.
  virtual void sendrecv(int core, const isa::Instruction& ins, const DmaPlan& plan,
                        std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                        Picoseconds t) = 0;
  // Core `core` issued collective `ins` (its DMA trigger paid) at `t`. The ranks of its
  // replica group's list meet; the group applies `signals` on this core when the collective
  // ends (fabric/rank_group.h). Groups of physical cores have no ranks: they fault (kPeer).
  virtual void collective(int core, const isa::Instruction& ins, const DmaPlan& plan,
                          std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                          Picoseconds t) = 0;
};

// Told when a transfer submitted with a listener ends (instead of the executor and signals).
class DmaListener {
 public:
  virtual ~DmaListener() = default;
  virtual void dma_done(uint64_t tag, Picoseconds now) = 0;
};

}  // namespace trnsim::core
