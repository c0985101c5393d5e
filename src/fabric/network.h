// The ranks of a collective placed on a system, and the resources their transfers use:
//   - every link of the topology (topology.h);
//   - each rank's collective DMA: the CC-cores that sequence a collective's DMA engines
//     (HARDWARE.md s7), `collective.dma_engines_per_cc_core` engines each at the chip's
//     theoretical per-engine rate (core.dma.engine_bandwidth_theoretical_gbps), shared by the
//     ranks of a chip in proportion to their cores. A reduction costs twice its bytes there
//     unless the chip has near-memory accumulation (AG4: "the DMA CC engines add at 50%");
//   - each chip's HBM (chip.hbm.bandwidth_gbps): a copy reads once and writes once, a
//     reduction reads twice (its two operands, on the sending chip) and writes once.
// Ranks are cores (logical cores of `lnc` physical cores) or whole chips. A server holds
// `ranks_per_server` ranks on its first chips in ring order; ranks fill a chip's cores first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/units.h"
#include "fabric/plan.h"
#include "fabric/system.h"
#include "fabric/topology.h"

namespace trnsim::fabric {

enum class RankUnit : uint8_t { kCore, kChip };

struct Placement {
  RankUnit unit = RankUnit::kCore;
  int64_t ranks = 2;
  int lnc = 0;                   // 0: the system's collective.lnc
  int64_t ranks_per_server = 0;  // 0: fill each server
};

struct Use {
  int64_t resource;
  double coef;
};

class Network {
 public:
  Network(const SystemSpec& spec, const Placement& placement);

  const Topology& topology() const { return topo_; }
  const SystemSpec& spec() const { return *spec_; }
  int64_t ranks() const { return ranks_; }
  int ranks_per_chip() const { return ranks_per_chip_; }
  int64_t ranks_per_server() const { return ranks_per_server_; }
  int64_t servers_used() const { return (ranks_ + ranks_per_server_ - 1) / ranks_per_server_; }
  int64_t chip_of(int64_t rank) const;
  int64_t server_of(int64_t rank) const { return rank / ranks_per_server_; }
  bool near_memory_accumulation() const { return near_memory_; }

  int64_t num_resources() const { return topo_.num_links() + ranks_ + topo_.chips(); }
  double capacity(int64_t resource) const;  // bytes per second
  std::string resource_name(int64_t resource) const;
  double dma_bytes_per_s() const { return dma_Bps_; }

  // Appends the resources of one transfer (each resource once) and returns its latency.
  //   collective DMA of the executor: operands read, or one fewer with near-memory
  //     accumulation (the last addition is done at the memory), at least 1 (assumed: the
  //     engine's rate is set by what it reads; a duplicated write costs no second read);
  //   HBM: one read per operand on its chip (dst's old value on the executor's chip), one
  //     write per destination on its chip;
  //   links: the route of every operand on another chip to the executor, and from the
  //     executor to every destination on another chip.
  // Latency: the step latency, plus the slowest operand route and the slowest destination
  // route (or the core-to-core latency on one chip).
  Picoseconds path(const Transfer& x, std::vector<Use>& out) const;
  Picoseconds step_latency() const { return step_lat_; }

  // Orders of all ranks that rings may follow, one per server ring order of the topology and
  // then the same with each server's part reversed (more than two ranks): servers in turn, chips in
  // the server's order, a chip's ranks consecutively.
  const std::vector<std::vector<int32_t>>& ring_orders() const { return ring_orders_; }
  // The ranks in hypercube order (recursive halving-doubling partners are neighbours).
  const std::vector<int32_t>& hypercube_order() const { return hypercube_order_; }

 private:
  const SystemSpec* spec_;
  Topology topo_;
  int64_t ranks_;
  int ranks_per_chip_;
  int64_t ranks_per_server_;
  bool near_memory_;
  double dma_Bps_, hbm_Bps_;
  Picoseconds step_lat_, core_lat_;
  std::vector<int64_t> used_chips_;  // local chip numbers, in ring order 0, used per server
  std::vector<std::vector<int32_t>> ring_orders_;
  std::vector<int32_t> hypercube_order_;
};

}  // namespace trnsim::fabric
