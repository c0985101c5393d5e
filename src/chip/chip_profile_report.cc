#include "chip/chip_profile_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/timing/profile_report.h"
#include "profile/readable.h"

namespace trnsim::chip {

namespace {

using profile::bytes_text;
using profile::pct;
using profile::rate_text;
using profile::time_text;

double ns(Picoseconds t) { return static_cast<double>(t.v) * 1e-3; }

// The HBM stack physical core `core` sits on (the stacks list their cores).
int stack_of_core(const ChipProfile& p, int core) {
  for (const StackTraffic& st : p.stacks)
    for (int c : st.cores)
      if (c == core) return st.stack;
  return 0;
}

// Nodes on a core's critical path that another core of its logical core released.
uint64_t peer_nodes(const core::CoreProfile& c) {
  return c.path.edges[static_cast<size_t>(core::PathEdge::kPeer)];
}

std::string what_runs(const ChipProfile& p) {
  const size_t n = p.cores.size();
  const size_t groups = p.lnc > 0 ? n / static_cast<size_t>(p.lnc) : 1;
  return groups == 1
             ? fmt::format("{} physical core{} in one logical core (LNC={})", n, n == 1 ? "" : "s",
                           p.lnc)
             : fmt::format("{} physical cores in {} logical cores of LNC={}", n, groups, p.lnc);
}

std::string cores_table(const ChipProfile& p) {
  std::string s = fmt::format("{:<5} {:>7} {:>5} {:>10} {:<8} {:>8} {:>10}", "core", "lc/rank",
                              "stack", "time", "bound", "MFU", "HBM");
  for (isa::Engine e : isa::kAllEngines)
    s += fmt::format(" {:>7}", fmt::format("{} %", isa::engine_name(e)));
  s += fmt::format(" {:>7} {:>5} {:>6}\n", "dma %", "peer", "faults");
  for (size_t i = 0; i < p.cores.size(); ++i) {
    const core::CoreProfile& c = p.cores[i];
    const core::TimingResult::Bound b = c.result.bound();
    const auto core = static_cast<int>(i);
    s += fmt::format("{:<5} {:>7} {:>5} {:>10} {:<8} {:>7.2f}% {:>10}", core,
                     fmt::format("{}/{}", core / p.lnc, core % p.lnc), stack_of_core(p, core),
                     time_text(c.result.total), c.roofline.verdict, 100.0 * c.roofline.mfu,
                     rate_text(c.roofline.hbm_bytes_per_s));
    for (double share : b.engine_share) s += fmt::format(" {:>6.2f}%", 100.0 * share);
    s += fmt::format(" {:>6.2f}% {:>5} {:>6}\n", 100.0 * b.dma_share, peer_nodes(c),
                     c.result.faults.size());
  }
  return s;
}

}  // namespace

std::string chip_profile_header(const ChipProfile& p) {
  std::string s = fmt::format("chip: {}\n", what_runs(p));
  s += fmt::format("total time: {}, the end of core {} (the slowest); {} instructions",
                   time_text(p.total), p.slowest, p.instructions);
  if (p.launch.v > 0)
    s += fmt::format(" (a kernel launch adds {}: core.launch.overhead_ns)", time_text(p.launch));
  s += fmt::format("\nbound: {} ({}), that of core {}, the slowest (its end is the chip's)\n",
                   core::bound_name(p.bound), p.bound, p.slowest);
  s += fmt::format(
      "TensorE: MFU {}, HFU {} of {} cores x {:.2f} TFLOPS BF16 peak over the chip's time; "
      "{:.4g} FLOPs\n",
      pct(p.mfu), pct(p.hfu), p.cores.size(), p.peak_flops * 1e-12, p.flops);
  s += fmt::format("HBM: {} moved, {}: {} of the chip's {}\n", bytes_text(p.hbm_bytes),
                   rate_text(p.hbm_bytes_per_s),
                   pct(p.hbm_peak_bytes_per_s > 0 ? p.hbm_bytes_per_s / p.hbm_peak_bytes_per_s : 0),
                   rate_text(p.hbm_peak_bytes_per_s));
  for (const StackTraffic& st : p.stacks)
    s += fmt::format("  stack {} (core{} {}): {}, {}: {} of its {}\n", st.stack,
                     st.cores.size() == 1 ? "" : "s", fmt::join(st.cores, ", "),
                     bytes_text(st.hbm_bytes), rate_text(st.bytes_per_s),
                     pct(st.peak_bytes_per_s > 0 ? st.bytes_per_s / st.peak_bytes_per_s : 0),
                     rate_text(st.peak_bytes_per_s));
  s += '\n';  // not "\n" + ...: GCC 12 warns of a false -Wrestrict there
  s += cores_table(p);
  s += "(each core's time, bound, MFU and HBM rate are its own; busy % of its time. A core's "
       "critical path stays within the core: `peer` counts its nodes that another core of the "
       "logical core released, at a core_barrier or a sendrecv)\n";
  return s;
}

std::string chip_profile_text(const ChipProfile& p) {
  std::string s = chip_profile_header(p);
  for (size_t i = 0; i < p.cores.size(); ++i) {
    const auto core = static_cast<int>(i);
    s += fmt::format("\n== core {} (logical core {}, rank {}, HBM stack {}) ==\n", core,
                     core / p.lnc, core % p.lnc, stack_of_core(p, core));
    s += core::profile_text(p.cores[i]);
  }
  return s;
}

nlohmann::json chip_profile_json(const ChipProfile& p) {
  nlohmann::json stacks = nlohmann::json::array(), per_core = nlohmann::json::array(),
                 cores = nlohmann::json::array();
  for (const StackTraffic& st : p.stacks)
    stacks.push_back(
        {{"stack", st.stack},
         {"cores", st.cores},
         {"hbm_bytes", st.hbm_bytes},
         {"hbm_gbps", st.bytes_per_s * 1e-9},
         {"hbm_peak_gbps", st.peak_bytes_per_s * 1e-9},
         {"hbm_share", st.peak_bytes_per_s > 0 ? st.bytes_per_s / st.peak_bytes_per_s : 0.0}});
  size_t faults = 0;
  for (size_t i = 0; i < p.cores.size(); ++i) {
    const core::CoreProfile& c = p.cores[i];
    const core::TimingResult::Bound b = c.result.bound();
    const auto core = static_cast<int>(i);
    nlohmann::json shares = nlohmann::json::object();
    for (isa::Engine e : isa::kAllEngines)
      shares[std::string(isa::engine_name(e))] = b.engine_share[static_cast<size_t>(e)];
    shares["dma"] = b.dma_share;
    per_core.push_back({{"core", core},
                        {"logical_core", core / p.lnc},
                        {"rank", core % p.lnc},
                        {"stack", stack_of_core(p, core)},
                        {"total_ns", ns(c.result.total)},
                        {"bound", c.roofline.verdict},
                        {"mfu", c.roofline.mfu},
                        {"hfu", c.roofline.hfu},
                        {"hbm_gbps", c.roofline.hbm_bytes_per_s * 1e-9},
                        {"busy_shares", shares},
                        {"peer_released", peer_nodes(c)}});
    cores.push_back(core::profile_json(c));
    faults += c.result.faults.size();
  }
  const size_t n = p.cores.size();
  nlohmann::json chip = {
      {"name", p.chip},
      {"cores", n},
      {"lnc", p.lnc},
      {"logical_cores", p.lnc > 0 ? n / static_cast<size_t>(p.lnc) : 1},
      {"total_ns", ns(p.total)},
      {"total_ps", p.total.v},
      {"launch_ns", ns(p.launch)},
      {"slowest_core", p.slowest},
      {"instructions", p.instructions},
      {"flops", p.flops},
      {"issued_flops", p.issued_flops},
      {"peak_tflops", p.peak_flops * 1e-12},
      {"mfu", p.mfu},
      {"hfu", p.hfu},
      {"hbm_bytes", p.hbm_bytes},
      {"hbm_gbps", p.hbm_bytes_per_s * 1e-9},
      {"hbm_peak_gbps", p.hbm_peak_bytes_per_s * 1e-9},
      {"hbm_share", p.hbm_peak_bytes_per_s > 0 ? p.hbm_bytes_per_s / p.hbm_peak_bytes_per_s : 0.0},
      {"stacks", stacks},
      {"bound", {{"verdict", p.bound}, {"name", core::bound_name(p.bound)}, {"core", p.slowest}}},
      {"per_core", per_core},
      {"faults", faults}};
  return {{"chip", chip}, {"cores", cores}};
}

}  // namespace trnsim::chip
