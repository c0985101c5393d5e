// The core's DMA engines and queues (HARDWARE.md s4), timed:
//  - A DMA instruction issued by a sequencer at t is split into pieces (dma_plan.h), each queued
//    on its engine's queue `queue`. A piece can start at t + fixed_overhead_ns (DMA-BW: ~1300 ns
//    "from semaphore to start" of the transfer), which is latency, not engine occupancy.
//  - Each engine runs one piece at a time; pieces of a queue run in order; an idle engine picks
//    the next ready head round-robin across its queues (DMA-OV, NC-v2/v3; NC-v4's QoS classes
//    are not modelled: round-robin there too).
//  - A running piece streams at the engine's practical bandwidth (DMA-OV/DMA-BW: 17 / 23 / 33
//    B/ns, the sustained per-engine rate), times the transfer's throughput percentage (DMA
//    transpose, legacy accumulate). Pieces that touch HBM share the bandwidth of the HBM stack
//    the core sits on (hbm_pool.h: with the other cores of that stack), fairly: each gets
//    min(engine rate, stack bandwidth / weight) where the weight counts the HBM endpoints of
//    every running piece on the stack. A per-core cap is shared equally by the busy engines:
//    dma.core_bandwidth_gbps while they gather rows from HBM, dma.core_block_bandwidth_gbps
//    while their HBM side is one contiguous block, and dma.core_write_bandwidth_gbps (the
//    lower, if lower) while they write HBM; with several kinds running, each byte takes its
//    kind's share of the core's time (r = 1 / sum over running pieces of 1 / C_kind): HBM
//    efficiency by access pattern and direction (docs/timing.md "DMA"). A fluid model: rates are
//    re-divided whenever a piece starts or ends, with exact integer arithmetic. All pieces of one
//    kind (on-chip only, touching HBM) stream at the same rate, so each kind is one virtual-time
//    class (dma_rate_class.h): a start or an end costs O(log pieces), not a reschedule of every
//    running piece.
//  - Symmetry: when every DMA of the program spreads evenly over all engines
//    (TimingProgram::dma_engines_symmetric), the engines are exchangeable, so one engine is
//    simulated standing for all (`fold_`): it counts `fold_` times in the bandwidth shares, and
//    its busy time, pieces and trace events are replicated. Results are identical to
//    simulating each engine (tests/cpp/core/timing_dma_test.cc checks both ways).
//  - The instruction completes, and its semaphore signals apply, when its last piece ends.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <queue>
#include <span>
#include <utility>
#include <vector>

#include "base/int128.h"
#include "core/dma/dma_rate_class.h"
#include "core/dma/hbm_pool.h"
#include "core/timing/cross_core.h"
#include "core/timing/timing_context.h"

namespace trnsim::core {

class DmaEngines : public sim::Component {
 public:
  // `fold`: allow the symmetric shortcut when the program permits it (false: always simulate
  // each engine; for tests that compare the two).
  // `pool`: the HBM stack's bandwidth, which this core's engines share with its other cores.
  DmaEngines(TimingContext& ctx, HbmPool& pool, bool fold = true);

  // A DMA instruction issued at `t` by `trigger` (issue number `id`). When its last piece
  // ends, `signals` (the instruction's) apply and the executor runs it; or, with a
  // `listener`, the listener is told (`tag`) instead (sendrecv: chip/core_group.h).
  void submit(const isa::Instruction& ins, const DmaPlan& plan,
              std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
              Picoseconds t, DmaListener* listener = nullptr, uint64_t tag = 0);
  void handle(const sim::Event& e) override;

  uint64_t engine_rate() const { return engine_rate_; }  // bytes per second, one engine
  Picoseconds fixed_overhead() const { return overhead_; }

 private:
  friend class HbmPool;  // advances and re-settles the members when one's HBM weight changes

  enum Kind : uint32_t { kWake = 0, kPiecesDone = 1 };
  enum RateKind : int { kOnChip = 0, kTouchesHbm = 1 };

  struct Transfer {
    const isa::Instruction* ins = nullptr;
    const DmaPlan* plan = nullptr;
    std::span<const isa::SemSignal> signals;
    isa::Engine trigger = isa::Engine::kSync;
    uint64_t id = 0;
    int32_t pieces_left = 0;
    DmaListener* listener = nullptr;
    uint64_t tag = 0;
    uint32_t path_node = UINT32_MAX;  // its node in the critical-path graph (timing_path.h)
  };
  struct Pending {
    uint32_t transfer = 0;
    uint32_t piece = 0;
    Picoseconds ready;
  };
  struct Active {
    bool busy = false;
    uint32_t transfer = 0;
    uint32_t piece = 0;
    int32_t hbm_sides = 0;
    uint128 core_share = 0;  // its weight in the core's caps (share_of)
    Picoseconds started;
    uint32_t behind = UINT32_MAX;  // the transfer it waited for this engine behind (timing_path.h)
  };

  void wake_engine(int engine, Picoseconds t);
  void schedule_wake_event();
  // Starts the engine's next ready piece (round-robin over its queues), or arranges a wake.
  void start_next(int engine, Picoseconds now);
  void finish_piece(int engine, Picoseconds now);
  void advance(Picoseconds now);
  // Re-divides the bandwidth after starts and ends at `now` (telling the pool of a change of
  // this core's HBM weight) and schedules the next completion.
  void settle(Picoseconds now);
  // The rate of one busy engine under the core's caps (UINT64_MAX: none).
  uint64_t capped_rate() const;
  // kShareScale / (the cap of the piece's kind): the core's time one byte of it takes, in
  // units that keep the sum over pieces exact (0: no cap applies). Four kinds (gathered or a
  // block, writing HBM or not), divided out once in the constructor (shares_).
  uint128 share_of(const DmaPiece& piece) const {
    return shares_[(piece.gathered ? 2u : 0u) + (piece.writes_hbm ? 1u : 0u)];
  }
  uint128 compute_share(bool gathered, bool writes_hbm) const;
  uint32_t new_transfer();

  TimingContext& ctx_;
  const int engines_, queues_;
  HbmPool& pool_;
  const uint64_t engine_rate_;
  const uint64_t core_rate_;   // bytes per second, all engines together (UINT64_MAX: no cap)
  const uint64_t block_rate_;  // the same for contiguous-block transfers
  const uint64_t write_rate_;  // the same for transfers that write HBM
  const Picoseconds overhead_;
  const uint128 descriptor_work_;  // one descriptor's fixed time, as work (ps x engine rate)
  const int fold_;  // engines one simulated engine stands for (1: each engine simulated)

  std::vector<Transfer> transfers_;
  std::vector<uint32_t> free_transfers_;
  std::vector<std::deque<Pending>> queues_by_engine_;  // engine * queues + queue
  std::vector<Active> active_;
  std::vector<int> round_robin_;
  std::vector<uint64_t> ready_queues_;  // per engine: bit q set when queue q is not empty
  // Idle engines to wake when a queued piece becomes ready: one simulator event for the
  // earliest (a DMA spread over 16 engines wakes them with one event, not 16).
  std::vector<Picoseconds> wake_at_;  // pending wake per engine (INT64_MAX: none)
  using Wake = std::pair<Picoseconds, int>;
  std::priority_queue<Wake, std::vector<Wake>, std::greater<>> wakes_;
  Picoseconds wake_event_at_{INT64_MAX};
  uint64_t wake_gen_ = 0;
  std::array<DmaRateClass, 2> classes_;  // by RateKind
  uint64_t busy_ = 0, hbm_weight_ = 0;   // running pieces, their HBM endpoints
  uint128 core_shares_ = 0;              // the running pieces' share_of, summed
  std::array<uint128, 4> shares_{};      // share_of by kind
  // capped_rate() for the core_shares_ it was last computed for (a 128-bit division).
  mutable uint128 capped_for_ = 0;
  mutable uint64_t capped_rate_ = UINT64_MAX;
  uint64_t pool_weight_ = 0;        // hbm_weight_ as the pool last heard it
  Picoseconds done_at_{INT64_MAX};  // the scheduled completion event (INT64_MAX: none)
  uint64_t done_gen_ = 0;           // completion events of older schedules are stale
};

}  // namespace trnsim::core
