// Cross-engine synchronisation, resolved into semaphores as the Neuron compiler does, so that
// a kernel author never writes one.
//
// Agents. An agent is something that completes instructions in order: each of the five
// engines for its own (non-DMA) instructions, except that TensorE's load_stationary runs on
// its background unit (core/cost/cost.h: it overlaps the previous matmul, so it may complete before
// it) and is an agent of its own; and each DMA queue for the transfers put on it.
// A DMA queue agent is keyed by (trigger stream, dma_queue, and the DMA engines the transfer's
// pieces use: isa/dma_span.h's first engine group and count): transfers with the same key use
// the same engines (core/dma/dma_plan.h), and pieces of one queue run in order on each engine,
// so they complete in order, whichever partitions they move. Instructions of one engine need no
// semaphore between them (the engine keeps its own order); everything else does, including two
// transfers of one DMA queue (their pieces on different engines are not ordered).
//
// Rule. Every instruction waits for the conflicting accesses dep_tracker.h reports (RAW, WAR,
// WAW) of other agents. A wait is `semaphore(agent) >= n`: the agent's instructions that
// anybody waits for signal its semaphore by +1 when they complete (a DMA when its transfer
// completes), so n is the waited instruction's rank among them. Semaphores only count up.
//
// Pruning. Each stream keeps what it already knows has completed: after a wait for agent B's
// instruction j, it knows B's first j instructions completed, and also everything B's stream
// knew when j issued (vector clocks). A dependency that is already known adds no wait. A DMA
// waits where it is triggered: on the trigger instruction, in its stream.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isa/engine.h"
#include "isa/program.h"
#include "kernel/dep_tracker.h"

namespace trnsim::kernel {

struct InstrRef {
  isa::Engine stream = isa::Engine::kSync;
  int32_t index = 0;
};

struct AgentInfo {
  bool dma = false;
  bool background = false;                  // TensorE's load_stationary unit
  isa::Engine engine = isa::Engine::kSync;  // the engine, or the stream that triggers the DMAs
  int32_t queue = -1;                       // DMA: the instruction's dma_queue
  int32_t first_group = 0, engines = 0;     // DMA: the engines its pieces use (isa/dma_span.h)
  // DMA: sendrecv / collective of that trigger and queue, which complete when their peers say
  // (isa::is_peer_transfer), not in order with the queue's own transfers.
  bool peer = false;
  std::string label() const;
};

struct SyncStats {
  int64_t waits = 0;    // semaphore waits emitted
  int64_t pruned = 0;   // dependencies already known, so not waited for
  int64_t signals = 0;  // instructions that signal
  int32_t semaphores = 0;
  int32_t agents = 0;
};

class SyncResolver {
 public:
  SyncResolver();

  static int32_t engine_agent(isa::Engine e) { return static_cast<int32_t>(e); }
  static constexpr int32_t kPeBackground = isa::kNumEngines;  // load_stationary
  int32_t dma_agent(isa::Engine trigger, int32_t queue, int32_t first_group, int32_t engines,
                    bool peer = false);
  const AgentInfo& agent(int32_t a) const { return agents_.at(static_cast<size_t>(a)); }

  // Registers the next instruction of `agent`, at `ref` in `stream`, which must wait for
  // `deps`. Returns its AgentSeq. Its waits are added to the program by finalize().
  AgentSeq add(int32_t agent, isa::Engine stream, InstrRef ref, std::vector<AgentSeq> deps);

  // The latest instruction of every agent so far: what a barrier waits for.
  std::vector<AgentSeq> latest() const;

  // Adds every signal and semaphore wait to `prog` and sets num_semaphores. Throws InputError
  // when the kernel needs more semaphores than a core has.
  void finalize(isa::Program& prog);
  const SyncStats& stats() const { return stats_; }

 private:
  using Knowledge = std::vector<int32_t>;  // per agent: highest seq known complete (-1: none)
  struct PendingWait {
    InstrRef at;
    AgentSeq on;
  };

  std::vector<AgentInfo> agents_;
  std::vector<std::vector<InstrRef>> instrs_;                            // [agent][seq]
  std::vector<std::vector<std::shared_ptr<const Knowledge>>> known_at_;  // [agent][seq]
  std::array<std::shared_ptr<const Knowledge>, isa::kNumEngines> stream_known_;
  std::vector<PendingWait> waits_;
  SyncStats stats_;
};

}  // namespace trnsim::kernel
