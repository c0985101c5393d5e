// The happens-before order of a program's executed instructions, for the race checker: stream
// order, in-order completion per agent, and the semaphores (race_check.h states the model).
// Each executed instruction is two events, its issue and its completion; every event lies on
// one chain (issues on their stream, completions on their agent), so the order is kept as a
// vector clock per event over the chains.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/core_spec.h"
#include "core/race/race_check.h"
#include "isa/program.h"

namespace trnsim::core {

// What a generation's DMA write barrier (spec core.dma.write_barrier: HW-T2 names the two kinds
// and defines neither) orders between two transfers from one stream on the same ring (DMA
// engine and queue), the earlier x and the later y. trnsim's reading, an assumption:
//   write-after-write: y's writes land after x's writes, so after x's reads too (x has read
//     what it writes): WAW and WAR are ordered; RAW is not (y may read before x's posted
//     writes land);
//   strong-order-write: x's writes are visible before the ring starts y: RAW too.
struct DmaWriteOrder {
  bool write_after_write = false, write_after_read = false, read_after_write = false;
  bool orders(FindingKind race) const;
};
// Throws InputError for a barrier name it does not know (the schema admits only the two).
DmaWriteOrder dma_write_order(const arch::DmaSpec& dma);

// Something that completes its instructions in order.
struct Agent {
  bool dma = false;
  bool background = false;                  // TensorE's load_stationary unit
  isa::Engine stream = isa::Engine::kSync;  // the engine, or the stream that triggers the DMA
  int32_t queue = -1, first_group = 0, engines = 0;  // DMA engines used (isa/dma_span.h)
  std::string label() const;  // "dve", "pe-background", "dma queue 3 from sp on engines 0-15"
};

struct ExecNode {
  isa::Engine stream = isa::Engine::kSync;
  int32_t index = 0;       // in the stream
  int64_t occurrence = 0;  // executions of the same instruction before this one
  uint32_t pos = 0;        // place in the stream's execution order
  uint32_t agent = 0;
  uint32_t rank = 0;  // place in the agent's completion order
};

// A problem with the synchronisation itself; nodes are ExecNode indices (-1: none).
struct SyncProblem {
  FindingKind kind = FindingKind::kDeadlock;
  int64_t first = -1, second = -1;
  int32_t semaphore = -1;
  std::string detail;
};

class HappensBefore {
 public:
  // Unrolls every stream; stops when more than `limit` instructions would execute.
  HappensBefore(const isa::Program& prog, const arch::CoreSpec& core, size_t limit);

  bool too_big() const { return too_big_; }
  // Not checked because a branch depends on a value read from memory (control_flow.h).
  bool data_dependent() const { return data_dependent_; }
  size_t executed() const { return executed_; }
  const std::vector<ExecNode>& nodes() const { return nodes_; }
  const Agent& agent(uint32_t a) const { return agents_[a]; }
  const isa::Instruction& instruction(size_t node) const;

  // Adds the semaphore edges and computes the order. Returns what is wrong with the waits;
  // the queries below hold once it has returned without a deadlock.
  std::vector<SyncProblem> resolve();

  bool completes_before_issue(size_t x, size_t y) const;  // x completes before y issues
  bool issues_before(size_t x, size_t y) const;           // x issues before y issues

 private:
  struct Edge {
    uint32_t from, to;
    int32_t sem;  // >= 0: a semaphore wait
  };
  uint32_t agent_of(const isa::Instruction& in, isa::Engine stream);
  void add_sem_edges(std::vector<SyncProblem>& problems);
  bool order(std::vector<SyncProblem>& problems);
  SyncProblem cycle(const std::vector<uint32_t>& indeg) const;
  size_t chain_of(uint32_t event) const;
  uint32_t place_of(uint32_t event) const;

  const isa::Program& prog_;
  const arch::CoreSpec& core_;
  bool too_big_ = false;
  bool data_dependent_ = false;
  size_t executed_ = 0;
  std::vector<Agent> agents_;
  std::vector<ExecNode> nodes_;
  std::vector<Edge> edges_;
  std::vector<uint32_t> pred_first_, preds_;  // predecessors of each event (CSR)
  std::vector<int32_t> clocks_;  // [event][chain]: latest place on the chain known before it
  size_t chains_ = 0;
};

}  // namespace trnsim::core
