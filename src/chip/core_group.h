// The physical cores of one logical core running side by side on one simulator (HARDWARE.md
// s6), and what passes between them:
//  - core_barrier: the k-th barrier of every core meets; each core's remote semaphore update
//    reaches the others chip.lnc.remote_semaphore_ns after it arrives (an assumption: the NKI
//    ISA says the barrier is a remote semaphore write to each other core, then a local wait),
//    so core c passes at max(its own arrival, every other core's arrival + that latency).
//  - sendrecv: core A's k-th sendrecv on pipe p that sends to B meets B's k-th on pipe p that
//    receives from A. A's src streams to B's dst on A's DMA queue (the instruction's DMA plan,
//    SBUF to SBUF, no HBM traffic) once both have issued; an instruction completes, and its
//    signals apply, when its send and its receive have both ended. With values, the bytes
//    are copied when the transfer ends (same dtype and shape, checked: kPeer otherwise).
//  - Unmatched sendrecvs at the end of the run are kPeer faults of their core.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "arch/chip_spec.h"
#include "core/exec/executor.h"
#include "core/timing/core_timing.h"
#include "core/timing/cross_core.h"

namespace trnsim::chip {

class CoreGroup : public core::CrossCore, public core::DmaListener {
 public:
  CoreGroup(const arch::ChipSpec& chip, int cores);

  // Core `rank`'s timing model and, when values are computed, its executor.
  void attach(int rank, core::CoreTiming& timing, core::Executor* exec);

  void barrier(int core, core::Sequencer& seq, Picoseconds t) override;
  void sendrecv(int core, const isa::Instruction& ins, const core::DmaPlan& plan,
                std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                Picoseconds t) override;
  void dma_done(uint64_t tag, Picoseconds now) override;
  // Collectives go between ranks, each a logical core (fabric/rank_run.h): handed to `ranks`
  // as physical core `first + core` when forward_collectives was called, else a kPeer fault
  // (its signals applied so that the run goes on).
  void forward_collectives(core::CrossCore* ranks, int first) {
    ranks_ = ranks;
    first_ = first;
  }
  void collective(int core, const isa::Instruction& ins, const core::DmaPlan& plan,
                  std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                  Picoseconds t) override;

  // After the run: a kPeer fault for every sendrecv that never met its peer.
  void report_unmatched();

 private:
  struct Member {
    core::CoreTiming* timing = nullptr;
    core::Executor* exec = nullptr;
    std::deque<std::pair<core::Sequencer*, Picoseconds>> barriers;  // arrived, not yet passed
  };
  struct Exchange : core::PeerCall {  // one sendrecv instruction of one core
    bool sent = false, received = false;
  };
  struct Transfer {
    uint32_t from = 0, to = 0;  // exchanges: the sender's and the receiver's
    bool alike = true;          // src and dst of one dtype and shape (else a kPeer fault)
  };
  using Key = std::tuple<int, int, int>;  // (this core, the other core, pipe)

  // The first exchange in `waiting`, taken out; or none, after queuing `x` on `queue`.
  static std::optional<uint32_t> meet(std::deque<uint32_t>& waiting, uint32_t x,
                                      std::deque<uint32_t>& queue);
  void start(uint32_t from, uint32_t to);
  void finish_if_done(uint32_t x, Picoseconds now);
  void fault(const Exchange& x, std::string message);

  const Picoseconds remote_;
  core::CrossCore* ranks_ = nullptr;  // where collectives go (forward_collectives)
  int first_ = 0;
  std::vector<Member> members_;
  std::vector<Exchange> exchanges_;
  std::vector<Transfer> transfers_;
  std::map<Key, std::deque<uint32_t>> sends_;  // (sender, receiver, pipe): sends waiting
  std::map<Key, std::deque<uint32_t>> recvs_;  // (receiver, sender, pipe): receives waiting
};

}  // namespace trnsim::chip
