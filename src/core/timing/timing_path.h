// Feeds the dependency graph (profile/critical_path.h) from the timing model, for the critical
// path: one node per executed instruction and per DMA transfer, each with what finally let it
// go, the constraint of its issue released last:
//  - a semaphore wait: the instruction (or DMA transfer) whose signal brought the counter to
//    the value waited for;
//  - a shared SBUF/PSUM port: the other engine's instruction holding it;
//  - the engine itself: the earlier instruction whose result it reads (raw_back), the one
//    occupying the unit it needs (or TensorE's background unit), or the one before it in the
//    stream (one issue per cycle);
//  - a DMA transfer: its trigger instruction, or the transfer ahead of it on its DMA engine
//    when its last piece had to wait for that engine.
// It reads the times the sequencers and DMA engines compute and changes none; a run without a
// graph pays one pointer test per instruction. Labels are static instructions (all engines'
// streams one after the other); a transfer carries its trigger's label on lane kDmaLane.
// Across cores (a logical core's core_barrier and sendrecv) the graph stays within the core:
// what another core did is not followed, but a node it released says so (kPeer), its
// predecessor being the barrier or sendrecv of this core that waited for the other core.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/timing/timing_program.h"
#include "profile/critical_path.h"

namespace trnsim::core {

inline constexpr int kDmaLane = isa::kNumEngines;  // lanes 0..4: the engines; 5: DMA
inline constexpr int kNumPathLanes = isa::kNumEngines + 1;

// How a node's predecessor held it (profile::DepNode::edge).
enum class PathEdge : uint8_t {
  kStart,      // nothing: it went at the start
  kSemaphore,  // another engine's instruction signalled the semaphore it waited on
  kDma,        // a DMA transfer's completion signalled it
  kPort,       // another engine held a shared port
  kResult,     // its own engine's earlier instruction, whose result it reads, retired
  kUnit,       // its own engine's earlier instruction freed the unit (or the background unit)
  kIssue,      // the instruction before it in the stream issued (one issue per cycle)
  kTrigger,    // a transfer: its trigger instruction issued
  kQueue,      // a transfer: the DMA engine finished the transfer ahead of it
  // Another core of the logical core released it: a core_barrier that waited for the other
  // cores passed, or a sendrecv completed (the exchange needs the peer's send and receive).
  kPeer,
};
inline constexpr int kNumPathEdges = 10;
const char* path_edge_name(PathEdge e);  // "start", "semaphore", "dma", "port", ..., "peer"

class TimingPath {
 public:
  // `cross`: the core runs in a logical core (core_barrier and sendrecv meet other cores).
  TimingPath(profile::DependencyGraph& graph, const TimingProgram& prog, bool cross);

  // The label of static instruction `index` of engine `e`, and back.
  uint32_t label(isa::Engine e, size_t index) const {
    return base_[static_cast<size_t>(e)] + static_cast<uint32_t>(index);
  }

  // Instruction `index` of `e` issued at t0; the engine may issue again at `next_issue`, its
  // unit is free at `free`, it retires at `retire`.
  void on_issue(isa::Engine e, size_t index, const InstrInfo& info, Picoseconds t0,
                Picoseconds next_issue, Picoseconds free, Picoseconds retire);
  // The core_barrier `e` issued last passed at `now`; its signals apply then. Passing later
  // than it arrived, it waited for another core: what it releases is kPeer.
  void on_barrier_release(isa::Engine e, std::span<const isa::SemSignal> signals, Picoseconds now);
  // The node of the instruction `e` issued last (kNoNode: none): a sendrecv's, for
  // on_sendrecv_done.
  uint32_t last_node(isa::Engine e) const { return engines_[static_cast<size_t>(e)].last.node; }
  // The sendrecv `node` completed at `now` (its send and its receive, one on the peer's DMA
  // queue, are done): its signals apply then, and what they release is kPeer.
  void on_sendrecv_done(uint32_t node, std::span<const isa::SemSignal> signals, Picoseconds now);
  // The DMA instruction `trigger` issued last was handed to the DMA engines at `t`: its
  // transfer's node.
  uint32_t on_dma_submit(isa::Engine trigger, Picoseconds t);
  // The transfer whose piece DMA engine `engine` finished last (kNoNode: none yet).
  uint32_t dma_engine_last(int engine) const {
    return static_cast<size_t>(engine) < dma_last_.size() ? dma_last_[static_cast<size_t>(engine)]
                                                          : profile::kNoNode;
  }
  void on_piece_done(int engine, uint32_t node);
  // The transfer `node` completed at `now`, its signals with it; its last piece started at
  // `started`, behind transfer `behind` on its engine (kNoNode: it did not wait for one).
  void on_dma_done(uint32_t node, uint32_t behind, Picoseconds started, Picoseconds now,
                   std::span<const isa::SemSignal> signals);

 private:
  struct Held {
    uint32_t node = profile::kNoNode;
    Picoseconds until;
    bool peer = false;  // another core let `node` go at `until` (kPeer)
  };
  struct EngineState {
    Held last;                              // the latest instruction; next issue slot
    std::array<Held, kNumUnits> unit{};     // per unit: its latest instruction; when free
    std::array<Held, kRawWindow> recent{};  // by issue number: retirement times
    uint64_t issued = 0;
  };
  struct SemEvent {
    Picoseconds t;
    int64_t value = 0;  // the counter after this signal
    uint32_t node = profile::kNoNode;
    bool peer = false;  // signalled when another core let `node` go (fits the padding)
  };
  struct Port {
    Held held;
    int engine = -1;
  };

  void signal(const isa::SemSignal& s, Picoseconds t, uint32_t node, bool peer = false);
  // The signal that satisfied `w` by `now` (its node and time), or {kNoNode, 0}.
  Held releaser(const isa::SemWait& w, Picoseconds now) const;

  profile::DependencyGraph& g_;
  const TimingProgram& prog_;
  const bool cross_;
  std::array<uint32_t, isa::kNumEngines> base_{};
  std::array<EngineState, isa::kNumEngines> engines_{};
  std::array<Port, kNumSharedPorts> ports_{};
  std::vector<std::vector<SemEvent>> sems_;  // per semaphore, by time
  std::vector<uint32_t> dma_last_;           // per DMA engine
};

}  // namespace trnsim::core
