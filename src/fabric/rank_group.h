// The ranks of a kernel run side by side (rank_run.h), and the collectives between them: NKI's
// nki.collectives, which the hardware runs on its collective DMA rings (HARDWARE.md s5), not
// on the engines.
//  - A rank is a logical core of `lnc` physical cores with HBM tensors of its own; its
//    programs' `collective` instructions name a replica group by index into the groups the run
//    was given. The k-th collective a rank issues on a group (every physical core of the rank
//    issues it: the compiler spreads one collective over the logical core's cores) meets the
//    k-th of every other rank of the group's list that holds it (the runtime pairs them by
//    order, as it does collectives). A rank of several cores moves its HBM tensors once; its
//    collectives of SBUF tiles (one per core) are refused (kPeer).
//  - A rank's collectives complete in the order it issued them, as the one queue of the
//    collective engine runs them: one that ends before an earlier one of its rank waits for
//    it (so that the kernel's semaphores, which count completions, see them in order).
//  - Once all of a list are there, the collective starts (the latest arrival); it lasts what
//    the fabric layer prices for that operation, size, dtype and list size on the system
//    (Fabric::simulate: its algorithm choice, links, handshakes; the runtime's host launch cost
//    is left out, as a kernel issues its collectives itself), then every rank's dst holds the
//    result and its signals apply. A list of one rank is a local DMA on its own queues.
//  - Values: sources are read at the start, results written at the end. A sum runs the plan
//    of the fabric's chosen algorithm on the data (functional.h: its order of fp32 additions,
//    rounded to the dtype as the DMA does); max / min and the moves are exact whatever the
//    order.
//  - A mismatch between the ranks of a meeting (kind, dtype, op, sizes, permute pairs), a rank
//    outside every list of its group, or a collective that never met its peers is a kPeer
//    fault of the ranks concerned; the run goes on.
// Assumed (docs/nki.md "Collectives"): a list is placed on the system as consecutive ranks
// of LNC=1 (a strided list is priced as a contiguous one of its size).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/exec/executor.h"
#include "core/timing/core_timing.h"
#include "core/timing/cross_core.h"
#include "fabric/collective.h"
#include "sim/simulator.h"

namespace trnsim::fabric {

// Replica groups by index; a group is its rank lists (global ranks, each at most once).
using ReplicaGroups = std::vector<std::vector<std::vector<int>>>;

class RankGroup : public core::CrossCore, public core::DmaListener, public sim::Component {
 public:
  // `groups` are checked by the caller (rank_run.h). `system` and `runtime` price the
  // collectives; they must outlive the group.
  // Physical core c belongs to rank c / lnc; `core` arguments below are physical cores.
  RankGroup(const SystemSpec& system, const RuntimeSpec& runtime, ReplicaGroups groups, int ranks,
            int lnc, sim::Simulator& sim);
  ~RankGroup() override;

  // Physical core `core`'s timing model and, when values are computed, its executor.
  void attach(int core, core::CoreTiming& timing, core::Executor* exec);

  // The cores' own group when a rank is one physical core (at LNC>1 chip::CoreGroup is, and
  // forwards collectives here): core_barrier passes at once, sendrecv has no peer (kPeer).
  void barrier(int core, core::Sequencer& seq, Picoseconds t) override;
  void sendrecv(int core, const isa::Instruction& ins, const core::DmaPlan& plan,
                std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                Picoseconds t) override;
  void collective(int core, const isa::Instruction& ins, const core::DmaPlan& plan,
                  std::span<const isa::SemSignal> signals, isa::Engine trigger, uint64_t id,
                  Picoseconds t) override;
  void dma_done(uint64_t tag, Picoseconds now) override;  // a list of one: its local copy
  void handle(const sim::Event& e) override;              // a meeting's end

  // After the run: a kPeer fault for every collective that never met its list.
  void report_unmatched();

 private:
  using Arrival = core::PeerCall;  // one collective instruction of one rank (`core`)
  struct Ticket {                  // an arrival until its completion applies
    Arrival a;
    bool done = false;            // ended; applies once its rank's earlier ones have
    bool copy = false;            // a list of one: dst = src when it applies
    std::vector<uint8_t> result;  // dst's codes to write when it applies (empty: none)
    std::vector<uint8_t> meta;    // collective_v: its metadata's codes to write (empty: none)
  };
  // What a collective_v does (rank_group_v.cc): per rank of the list its dst and metadata
  // after it (empty without values), and elements[i][j] sent from rank i to rank j.
  struct VOutcome {
    std::vector<std::vector<uint8_t>> dst, meta;
    std::vector<std::vector<int64_t>> elements;
  };
  struct Member {
    core::CoreTiming* timing = nullptr;
    core::Executor* exec = nullptr;
  };

  const std::vector<int>* list_of(int group, int rank) const;
  int rank_of(int core) const { return core / lnc_; }
  void meet(const std::vector<size_t>& tickets);
  // The mismatch between the members of a meeting, or "".
  std::string mismatch(const std::vector<Arrival>& m) const;
  // Each member's result codes (dst's elements in pattern order), from the sources.
  std::vector<std::vector<uint8_t>> compute(const std::vector<Arrival>& m, std::string& fault);
  Picoseconds price(const std::vector<Arrival>& m);
  // collective_v (rank_group_v.cc): the mismatch of its ranks' metadata shapes, or ""; what
  // it does (read from the metadata when the ranks have values, an even split otherwise);
  // its price for the elements it moves.
  std::string mismatch_v(const std::vector<Arrival>& m) const;
  VOutcome compute_v(const std::vector<Arrival>& m, bool values, std::string& why);
  Picoseconds price_v(const std::vector<Arrival>& m, const VOutcome& v);
  Fabric& fabric(int64_t ranks);  // the system with `ranks` ranks of LNC=1, made once
  void fault(const Arrival& a, const std::string& message);
  // Ticket `t` ended at `now`: it and the ones after it in its rank's order that ended apply.
  void complete(size_t t, Picoseconds now);
  void apply(Ticket& t, Picoseconds now);                 // dst written, signals applied
  void finish_companions(size_t first, Picoseconds now);  // a rank's cores after its copy

  const SystemSpec& system_;
  const RuntimeSpec& runtime_;
  ReplicaGroups groups_;
  int lnc_;
  sim::Simulator& sim_;
  std::vector<Member> members_;
  std::vector<Ticket> tickets_;                                // by arrival; DMA tags
  std::vector<std::deque<size_t>> order_;                      // per rank: not yet applied
  std::map<std::pair<int, int>, std::deque<size_t>> waiting_;  // (group, rank): not yet met
  std::vector<std::vector<size_t>> meetings_;                  // by event payload
  std::map<size_t, std::vector<size_t>> companions_;    // a rank's one-list copy: its other cores
  std::map<int64_t, std::unique_ptr<Fabric>> fabrics_;  // by list size
  // By kind, ranks, bytes, dtype and a permute's pairs.
  std::map<std::tuple<int, int64_t, int64_t, std::string, std::vector<int32_t>>, Picoseconds>
      prices_;
};

}  // namespace trnsim::fabric
