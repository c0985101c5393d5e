// Collectives beyond the 2-rank sweep: the nccom-test examples of VALIDATION.md s7 (2023 and
// Neuron 2.28 runtimes) and two sweeps of the nccom-test page that VALIDATION.md does not list
// (a 32-rank all-gather on one trn1.32xlarge and a 64-rank all-reduce on two). Mechanisms
// (docs/fabric.md): the network and collective DMA for the data; launch cost, per-step
// handshakes with each peer and the EFA proxy's per-exchange work for the fixed costs.
#include <fmt/format.h>

#include <string>

#include "fabric/collective.h"
#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

using fabric::Op;

struct Setup {
  std::string system, runtime;
  int64_t ranks = 2, servers = 1;
};

struct Case {
  Op op;
  int64_t bytes;
  double us;
  std::string fitted;  // the runtime keys this figure set; "" = checked
  std::string dtype = "fp32";
  std::vector<int32_t> perm = {};
  std::string algorithm = "auto";
};

std::string size_name(int64_t bytes) {
  if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} B", bytes);
}

// 15 % at 1 MiB and above, 25 % below, where the fixed costs dominate (issue 16).
double band(int64_t bytes) { return bytes >= kMiB ? 0.15 : 0.25; }

void run(const std::string& target, const Setup& s, const std::vector<Case>& cases,
         const std::string& source, std::vector<Record>& out) {
  std::vector<arch::Override> sets;
  if (s.servers > 1) sets.push_back({"cluster.servers", std::to_string(s.servers)});
  fabric::Placement pl;
  pl.unit = fabric::RankUnit::kCore;
  pl.ranks = s.ranks;
  pl.ranks_per_server = s.ranks / s.servers;
  const fabric::Fabric f(fabric::load_system(s.system, sets), fabric::load_runtime(s.runtime), pl);
  for (const Case& c : cases) {
    fabric::CollectiveRequest req;
    req.op = c.op;
    req.bytes = c.bytes;
    req.dtype = num::parse_format(c.dtype);
    req.perm = c.perm;
    req.algorithm = c.algorithm;
    const fabric::CollectiveResult r = f.simulate(req);
    const std::string name =
        fmt::format("{} r{}{} {}", fabric::op_name(c.op), s.ranks,
                    s.servers > 1 ? fmt::format("x{}n", s.servers) : "", size_name(c.bytes));
    out.push_back({target, name, "us", c.us, static_cast<double>(r.time.v) * 1e-6, band(c.bytes),
                   source,
                   fmt::format("{}, {} servers, {} ranks, {}, runtime {}; trnsim: {}, "
                               "handshakes {:.1f} us",
                               s.system, s.servers, s.ranks, c.dtype, s.runtime, r.algorithm,
                               static_cast<double>(r.timing.sync.v) * 1e-6),
                   c.fitted});
  }
}

}  // namespace

std::vector<Record> collective_s7_records() {
  std::vector<Record> out;
  const std::string src = "VALIDATION.md s7 (NCCOM)";
  // The quick check of the page (2023 runtime, as s4): 32 MiB uint8 on the two cores of a chip.
  run("collectives-s7", {"trn1.32xlarge", "neuron-2023", 2, 1},
      {{Op::kAllReduce, 32 * kMiB, 768, "", "uint8"}}, src, out);
  // Neuron 2.28 (Trn2 era): 8 ranks = two trn2 chips of four LNC=2 cores.
  run("collectives-s7", {"trn2.48xlarge", "neuron-2.28", 8, 1},
      {{Op::kAllGather, kKiB, 10.0, "launch.launch_us (neuron-2.28)"},
       {Op::kAllGather, 8 * kKiB, 10.22, ""},
       {Op::kAllGather, 64 * kKiB, 11.31, ""},
       {Op::kAllGather, 512 * kKiB, 14.83, ""},
       {Op::kPermute, 32 * kMiB, 894.24, "", "uint8", {1, 0, 3, 2, 4, 5, 6, 7}}},
      src, out);
  run("collectives-s7", {"trn2.48xlarge", "neuron-2.28", 16, 1},
      {{Op::kAllReduce, 8 * kKiB, 300, ""},
       {Op::kAllReduce, 128 * kKiB, 574, ""},
       {Op::kAllReduce, 2 * kMiB, 686, ""},
       {Op::kAllReduce, 32 * kMiB, 2754, ""},
       {Op::kAllReduce, 512 * kMiB, 9689.5, ""}},
      src, out);
  run("collectives-s7", {"trn2.48xlarge", "neuron-2.28", 2, 2},
      {{Op::kAllToAllV, kMiB, 955.05, ""}}, src, out);
  return out;
}

std::vector<Record> collective_page_records() {
  std::vector<Record> out;
  const std::string src = "nccom-test page examples (NCCOM; not in VALIDATION.md)";
  run("nccom-page", {"trn1.32xlarge", "neuron-2023", 32, 1},
      {{Op::kAllGather, kKiB, 151, "sync.peer_us, launch.overlap_us (neuron-2023)"},
       {Op::kAllGather, 8 * kKiB, 149, ""},
       {Op::kAllGather, 64 * kKiB, 150, ""},
       {Op::kAllGather, 512 * kKiB, 179, ""}},
      src, out);
  const std::string efa = "sync.efa_message_us (neuron-2023)";
  run("nccom-page", {"trn1.32xlarge", "neuron-2023", 64, 2},
      {{Op::kAllReduce, 8, 520, ""},
       {Op::kAllReduce, 256, 709, ""},
       {Op::kAllReduce, 8 * kKiB, 1013, ""},
       {Op::kAllReduce, 64 * kKiB, 1315, efa},
       {Op::kAllReduce, 1 * kMiB, 1328, efa},
       {Op::kAllReduce, 8 * kMiB, 1419, ""},
       {Op::kAllReduce, 32 * kMiB, 2711, ""},
       {Op::kAllReduce, 128 * kMiB, 6279, ""},
       {Op::kAllReduce, 512 * kMiB, 21803, ""},
       {Op::kAllReduce, 1 * kGiB, 41806, ""}},
      src, out);
  return out;
}

}  // namespace trnsim::validate
