// The collective runtime's software parameters (spec/runtime/<name>.toml), kept apart from the
// hardware: the per-collective launch cost and the size thresholds of the algorithm choice.
// VALIDATION.md s4: the 58 us floor of the 2023 nccom-test sweep is a software cost of that
// runtime version, not a property of the chip.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.h"
#include "arch/provenance.h"

namespace trnsim::fabric {

struct RuntimeSpec {
  std::string name, title, description;
  // A collective call costs launch_us of software time from call to completion report; the
  // device may start moving data after (launch_us - overlap_us), so that part of the software
  // cost proceeds while the data moves (docs/fabric.md, "Launch cost").
  double launch_us = 0;
  double overlap_us = 0;
  // Synchronisation per step (docs/fabric.md, "Handshakes"): before a step's data moves, each
  // rank does a semaphore round trip with every peer on its server that it reads from or
  // writes to in that step, one peer after the other (peer_sync_us each); a network proxy (a
  // host thread serving ranks_per_proxy ranks of one server, the runtime's
  // NEURON_RT_RANKS_PER_NETWORK_PROXY) handles every exchange of its ranks with peers on other
  // servers, one after the other (efa_message_us each). The data moves when the slowest of
  // them is done.
  double peer_sync_us = 0;
  double efa_message_us = 0;
  int64_t ranks_per_proxy = 1;
  // Algorithm choice (select.cc): mesh below mesh_max_bytes, RDH below rdh_max_bytes, then
  // KangaRing or ring; mesh only up to mesh_max_ranks ranks.
  double mesh_max_bytes = 0;
  double rdh_max_bytes = 0;
  int64_t mesh_max_ranks = 0;
  // Hierarchical: above this many servers the inter-server stage is rdh at every size.
  int64_t inter_ring_max_servers = 0;

  arch::FieldRecords fields;
  std::string file;
};

std::vector<std::string> list_runtimes();
// By name (spec/runtime/<name>.toml) or path, with overrides ("launch.launch_us=10").
RuntimeSpec load_runtime(std::string_view name_or_path,
                         const std::vector<arch::Override>& overrides = {});
std::string format_runtime_keys();
// Whether a `--set` key belongs to the runtime file (its tables: launch, sync, select) rather
// than the system file; `trnsim collective` and trnsim.fabric route overrides by it.
bool is_runtime_key(std::string_view key);

inline constexpr std::string_view kDefaultRuntime = "neuron-2023";

}  // namespace trnsim::fabric
