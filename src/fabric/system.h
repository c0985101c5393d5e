// A system of Trainium chips as data (spec/systems/<name>.toml): the chip generation, how the
// chips of one server connect (a torus of NeuronLinks or a NeuronSwitch), how servers connect
// (EFA), and the latencies of a collective step. Every value carries its provenance, as the chip
// files do (arch/provenance.h). The collective runtime's software costs are a separate file
// (runtime.h), so hardware and software never share a number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "arch/arch.h"
#include "arch/provenance.h"

namespace trnsim::fabric {

enum class ServerTopology : uint8_t { kTorus, kSwitch };

struct SystemSpec {
  // [meta]
  std::string name, title, description;
  std::string chip_name;  // spec/chips/<chip_name>.toml
  std::string status;     // "shipped", "projected", "what-if"

  // [server]: one NeuronLink domain (an instance, an UltraServer).
  int64_t chips_per_server = 0;
  ServerTopology topology = ServerTopology::kTorus;
  std::vector<int64_t> torus_dims;  // product = chips_per_server
  double link_gbps = 0;             // one torus link, one direction (GB/s)
  int outer_dims = 0;               // the last `outer_dims` dimensions use the outer links
  double outer_link_gbps = 0;
  double link_latency_ns = 0;        // one NeuronLink traversal
  double outer_link_latency_ns = 0;  // one traversal of an outer (between-instance) link
  double switch_port_gbps = 0;       // NeuronSwitch: per chip, each direction
  double switch_latency_ns = 0;

  // [cluster]: servers joined by EFA through a non-blocking spine.
  int64_t servers = 1;
  double efa_gbps_per_server = 0;  // GB/s, each direction
  double efa_latency_ns = 0;

  // [collective]: where a collective's transfers run and what a step costs.
  double step_latency_ns = 0;       // per step and transfer: semaphores, DMA start, HBM turnaround
  double core_link_latency_ns = 0;  // core to core inside a chip
  int dma_engines_per_cc_core = 1;  // DMA rings a CC-core keeps streaming
  int lnc = 1;                      // physical cores per logical core (rank) by default

  arch::ChipSpec chip;
  arch::FieldRecords fields;       // provenance of every system key
  std::vector<std::string> files;  // system files applied, base first

  int64_t chips() const { return chips_per_server * servers; }
};

// Where system names resolve: <arch::spec_dir()>/systems/<name>.toml.
std::vector<std::string> list_systems();

// A system by name or path (contains '/' or ends in ".toml"), `[meta] inherits` applied, then
// `overrides` ("cluster.servers=800"). Unknown keys, missing provenance, bad types and ranges
// throw InputError naming the file, line and key.
SystemSpec load_system(std::string_view name_or_path,
                       const std::vector<arch::Override>& overrides = {});

// Whether an override names a system key ("server.link_gbps", "cluster.efa_gbps",
// "collective.step_latency_ns"), not a chip key. What-ifs given together (`--set` of `trnsim
// train` / `serve` / `model --system`) split by it: system keys to load_system, the rest to the
// chip (arch::load_chip).
bool is_system_key(std::string_view key);
struct SplitOverrides {
  std::vector<arch::Override> chip, system;
};
SplitOverrides split_overrides(const std::vector<arch::Override>& all);

// Every system key with unit and meaning, as `trnsim spec --keys` lists chip keys.
std::string format_system_keys();

}  // namespace trnsim::fabric
