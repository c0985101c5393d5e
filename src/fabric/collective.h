// The fabric's public API: simulate one collective on a system (timing, from sizes only), run
// one on data (functional), sweep sizes as nccom-test does, and format the results.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/units.h"
#include "fabric/algorithm.h"
#include "fabric/functional.h"
#include "fabric/network.h"
#include "fabric/runtime.h"
#include "fabric/system.h"
#include "fabric/timing.h"
#include "numerics/format.h"

namespace trnsim::fabric {

struct CollectiveRequest {
  Op op = Op::kAllReduce;
  int64_t bytes = 0;  // size of the full tensor (plan.h); rounded down to whole elements
  num::Format dtype = num::fp32();
  Placement placement;
  std::string algorithm = "auto";
  std::string intra, inter;  // hierarchical stages; "" = by rule (Context)
  int ring_directions = 2;   // ring, torus-ring: 2 = both directions of every cycle, 1 = one
  int32_t root = 0;
  std::vector<int32_t> perm;               // permute; empty: rank i -> i+1
  std::vector<std::vector<int64_t>> a2av;  // all-to-all-v elements; empty: even
  bool folded = true;
};

struct CollectiveResult {
  Op op = Op::kAllReduce;
  std::string algorithm;
  int64_t ranks = 0, count = 0, bytes = 0;
  std::string dtype;
  Picoseconds time{0};    // what the caller sees: launch and device time combined
  Picoseconds device{0};  // the data movement alone
  Timing timing;
  double algbw_gib_s() const;  // bytes / time, GiB/s
  double busbw_gib_s() const;  // algbw * busbw_factor
};

// Everything a collective needs, built once per (system, runtime, placement).
class Fabric {
 public:
  Fabric(SystemSpec system, RuntimeSpec runtime, Placement placement);
  const Network& network() const { return *net_; }
  const SystemSpec& system() const { return system_; }
  const RuntimeSpec& runtime() const { return runtime_; }
  const Placement& placement() const { return placement_; }

  Context context(const CollectiveRequest& req) const;
  const Algorithm& choose(const Context& ctx, const std::string& forced) const;
  CollectiveResult simulate(const CollectiveRequest& req) const;
  // Runs the request's plan on `buf` (codes of req.dtype); returns the algorithm used (the
  // plan's name: hierarchical ones name their stages).
  std::string run(const CollectiveRequest& req, Buffers& buf) const;

 private:
  SystemSpec system_;
  RuntimeSpec runtime_;
  Placement placement_;
  std::unique_ptr<Network> net_;
};

// "8B:1GiB" (doubling), "8B:1GiB:4" (factor 4), "1MiB", "1KiB,4KiB,1GiB".
std::vector<int64_t> parse_sizes(const std::string& text);
int64_t parse_size(const std::string& text);  // "64", "8B", "4KiB", "1GiB", "1MB"

std::string format_sweep(const Fabric& f, const std::vector<CollectiveResult>& rows);
nlohmann::json sweep_json(const Fabric& f, const std::vector<CollectiveResult>& rows);
// One row of sweep_json; the text table from sweep_json's document (format_sweep is this of
// sweep_json), so rows kept as JSON (a resumed sweep's) print exactly as fresh ones.
nlohmann::json sweep_row_json(const CollectiveResult& r);
std::string format_sweep_json(const nlohmann::json& sweep);

// VALIDATION.md s4: the 2-rank all-reduce sweep (fp32, the two NeuronCores of one Trn1 chip,
// nccom-test, 2023), published time against simulated time per size.
struct SweepCheck {
  int64_t bytes;
  double measured_us, simulated_us;
};
std::vector<SweepCheck> allreduce_2rank_check();

}  // namespace trnsim::fabric
