// Concurrent collectives: several communicators of one Fabric run at once and share its links,
// collective DMA, HBM and NICs (TP groups inside every server while DP groups cross servers;
// nccom-test's multi-stream mode). Each group runs its own plan, step after step as alone
// (handshakes, then its transfers; a step ends when its slowest transfer lands), but its flows
// share bandwidth max-min fairly with whatever flows of other groups are running at that
// moment, so the groups' steps need not line up. Unfolded: every flow of every group.
//
// A group's plan is built on the group's own placement (its size, its ranks per server, the
// Fabric's rank unit and LNC) and its ranks are then mapped to the global ranks listed, so a
// group whose ranks sit like a communicator of that size (a server's ranks, one rank of every
// server) runs the plan it would run alone.
//
// Not folded: every flow is solved on its own and re-shared at every event, so at most 65,536
// transfers may be in flight at once (an InputError beyond). Handshakes are each group's own;
// network proxies shared by two groups do not delay each other (not modelled).
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/collective.h"

namespace trnsim::fabric {

struct GroupRequest {
  CollectiveRequest req;       // req.placement is ignored: the group's comes from `ranks`
  std::vector<int32_t> ranks;  // global rank of each group rank, in group order
};

struct ConcurrentResult {
  std::vector<CollectiveResult> groups;  // as alone: time, device, phases, traffic
  Picoseconds makespan{0};               // the slowest group's time
};

ConcurrentResult simulate_concurrent(const Fabric& fabric, const std::vector<GroupRequest>& groups);

// K equal groups of the Fabric's ranks: "contiguous" (group g holds ranks g*n/K .. (g+1)*n/K-1,
// e.g. one server each) or "strided" (group g holds g, g+K, g+2K, ...: one rank of each block).
std::vector<std::vector<int32_t>> split_ranks(int64_t ranks, int64_t groups,
                                              std::string_view layout);

}  // namespace trnsim::fabric
