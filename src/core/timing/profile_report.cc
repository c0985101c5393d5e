#include "core/timing/profile_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "isa/op_table.h"
#include "profile/readable.h"

namespace trnsim::core {

namespace {

double ns(Picoseconds t) { return static_cast<double>(t.v) * 1e-3; }
double share(Picoseconds part, Picoseconds whole) {
  return whole.v > 0 ? static_cast<double>(part.v) / static_cast<double>(whole.v) : 0.0;
}

using profile::bytes_text;
using profile::pct;
using profile::rate_text;
using profile::time_text;

std::string item_name(const PathItem& it) {
  std::string s = it.transfer ? "transfers of " + it.name : it.name;
  if (it.statics > 1)
    s += fmt::format(" [{} from #{}, {} instructions]", isa::engine_name(it.engine), it.index,
                     it.statics);
  else
    s += fmt::format(" [{} #{}]", isa::engine_name(it.engine), it.index);
  if (!it.source.empty())  // the file's name, not its directories: the line stays short
    s += " " + std::filesystem::path(it.source).filename().string();
  else if (it.line > 0)
    s += fmt::format(" line {}", it.line);
  return s;
}

std::string engines_table(const CoreProfile& p) {
  const TimingResult& r = p.result;
  bool barrier = false;
  for (const EngineStats& s : r.engines) barrier = barrier || s.stalled(Stall::kBarrier).v > 0;
  std::string s =
      fmt::format("{:<6} {:>12} {:>10} {:>8} {:>14} {:>10} {:>10} {:>10}", "engine", "instructions",
                  "busy", "busy %", "wait semaphore", "wait DMA", "wait port", "wait own");
  if (barrier) s += fmt::format(" {:>12}", "wait barrier");
  s += fmt::format(" {:>10}  {}\n", "idle", "semaphores waited on (signalling engine)");
  for (isa::Engine e : isa::kAllEngines) {
    const EngineStats& st = r.engines[static_cast<size_t>(e)];
    std::string on;
    for (isa::Engine q : isa::kAllEngines) {
      const Picoseconds w = st.waited_on[static_cast<size_t>(q)];
      if (w.v > 0)
        on += fmt::format("{}{} {}", on.empty() ? "" : ", ", isa::engine_name(q), time_text(w));
    }
    s += fmt::format("{:<6} {:>12} {:>10} {:>7.2f}% {:>14} {:>10} {:>10} {:>10}",
                     isa::engine_name(e), st.instructions, time_text(st.busy),
                     100.0 * share(st.busy, r.total), time_text(st.stalled(Stall::kSemaphore)),
                     time_text(st.stalled(Stall::kDma)), time_text(st.stalled(Stall::kPort)),
                     time_text(st.stalled(Stall::kOwn)));
    if (barrier) s += fmt::format(" {:>12}", time_text(st.stalled(Stall::kBarrier)));
    s += fmt::format(" {:>10}  {}\n", time_text(st.idle(r.total)), on.empty() ? "-" : on);
  }
  return s;
}

std::string bound_text(const CoreProfile& p) {
  const TimingResult::Bound b = p.result.bound();
  const profile::Roofline& rf = p.roofline;
  const std::string& v = rf.verdict;
  if (v == "hbm")
    return fmt::format(
        "bound: HBM (the run draws {} of the core's HBM ceiling; the busiest unit, "
        "{}, is busy less)\n",
        pct(rf.hbm_share), bound_name(b.verdict));
  if (v == "latency" || v == "none") {
    std::string busiest = "dma";
    double best = b.dma_share;
    for (isa::Engine e : isa::kAllEngines)
      if (b.engine_share[static_cast<size_t>(e)] > best) {
        best = b.engine_share[static_cast<size_t>(e)];
        busiest = isa::engine_name(e);
      }
    return fmt::format(
        "bound: latency (no unit is busy half of the run: it waits on dependencies; the busiest, "
        "{}, is busy {})\n",
        busiest, pct(best));
  }
  const double s = v == "dma" ? b.dma_share : [&] {
    for (isa::Engine e : isa::kAllEngines)
      if (isa::engine_name(e) == v) return b.engine_share[static_cast<size_t>(e)];
    return 0.0;
  }();
  return fmt::format("bound: {} ({}, busy {} of the run)\n", bound_name(v), v, pct(s));
}

std::string path_text(const CoreProfile& p) {
  const ProfilePath& cp = p.path;
  std::string s = fmt::format("critical path: {} instructions and transfers, {}\n", cp.length,
                              time_text(cp.time));
  std::vector<int> lanes;
  for (int l = 0; l < kNumPathLanes; ++l)
    if (cp.per_lane[static_cast<size_t>(l)].v > 0) lanes.push_back(l);
  std::stable_sort(lanes.begin(), lanes.end(), [&](int a, int b) {
    return cp.per_lane[static_cast<size_t>(a)] > cp.per_lane[static_cast<size_t>(b)];
  });
  s += "  share:";
  for (size_t i = 0; i < lanes.size(); ++i) {
    const Picoseconds t = cp.per_lane[static_cast<size_t>(lanes[i])];
    s += fmt::format("{} {} {} ({})", i ? "," : "", path_lane_name(lanes[i]), time_text(t),
                     pct(share(t, cp.time)));
  }
  s += "\n  released by:";
  bool first = true;
  for (int k = 0; k < kNumPathEdges; ++k) {
    if (cp.edges[static_cast<size_t>(k)] == 0) continue;
    s += fmt::format("{} {} {}", first ? "" : ",", path_edge_name(static_cast<PathEdge>(k)),
                     cp.edges[static_cast<size_t>(k)]);
    first = false;
  }
  s += "\n";
  if (cp.top.empty()) return s;
  s += fmt::format("  {:>10} {:>8} {:>8}  {:<5} {}\n", "time", "share", "count", "lane",
                   "instruction");
  for (const PathItem& it : cp.top)
    s += fmt::format("  {:>10} {:>7.2f}% {:>8}  {:<5} {}\n", time_text(it.time),
                     100.0 * share(it.time, cp.time), it.count,
                     it.transfer ? "dma" : std::string(isa::engine_name(it.engine)), item_name(it));
  return s;
}

std::string classes_text(const CoreProfile& p) {
  std::string s =
      fmt::format("instruction classes:\n  {:<5} {:<22} {:>9} {:>10} {:>8} {:>12} {:>10}\n", "lane",
                  "opcode", "count", "busy", "busy %", "TFLOPS busy", "HBM bytes");
  for (const InstructionClass& c : p.classes) {
    const double busy_s = static_cast<double>(c.busy.v) * 1e-12;
    s += fmt::format(
        "  {:<5} {:<22} {:>9} {:>10} {:>7.2f}% {:>12} {:>10}\n", isa::engine_name(c.engine),
        isa::mnemonic(c.op), c.count, time_text(c.busy), 100.0 * share(c.busy, p.result.total),
        c.issued_flops > 0 && busy_s > 0 ? fmt::format("{:.2f}", c.issued_flops / busy_s * 1e-12)
                                         : "-",
        c.hbm_bytes > 0 ? bytes_text(static_cast<double>(c.hbm_bytes)) : "-");
  }
  return s;
}

}  // namespace

std::string profile_text(const CoreProfile& p) {
  const TimingResult& r = p.result;
  const profile::Roofline& rf = p.roofline;
  std::string s =
      fmt::format("total time: {}, {} instructions", time_text(r.total), r.instructions);
  if (r.launch.v > 0)
    s += fmt::format(" (a kernel launch adds {}: core.launch.overhead_ns)", time_text(r.launch));
  s += "\n" + bound_text(p) + "\n" + engines_table(p) + "\n";
  s += fmt::format(
      "TensorE: MFU {}, HFU {} of the {:.2f} TFLOPS BF16 peak; {:.4g} FLOPs, {:.2f} "
      "TFLOPS achieved; MFU at each matmul's dtype peak {}\n",
      pct(rf.mfu), pct(rf.hfu), rf.peak_flops * 1e-12, rf.flops, rf.achieved_flops * 1e-12,
      pct(rf.mfu_dtype));
  s += fmt::format(
      "HBM: {} moved (read {}, write {}), {}: {} of the core's {} ceiling (the chip "
      "has {})\n",
      bytes_text(rf.hbm_bytes), bytes_text(static_cast<double>(r.dma.hbm_read_bytes)),
      bytes_text(static_cast<double>(r.dma.hbm_write_bytes)), rate_text(rf.hbm_bytes_per_s),
      pct(rf.hbm_share), rate_text(rf.hbm_peak), rate_text(p.chip_hbm_bytes_per_s));
  if (rf.roof == "none")
    s += "roofline: no FLOPs and no HBM traffic\n";
  else if (rf.hbm_bytes <= 0)
    s += fmt::format("roofline: no HBM traffic: under the compute roof ({:.2f} TFLOPS)\n",
                     rf.peak_flops * 1e-12);
  else
    s += fmt::format(
        "roofline: {:.4g} FLOP per HBM byte against a ridge of {:.4g}: under the {} "
        "roof, {:.2f} TFLOPS attainable, {:.2f} achieved\n",
        rf.intensity, rf.ridge, rf.roof, rf.attainable_flops * 1e-12, rf.achieved_flops * 1e-12);
  s += "\n" + path_text(p) + "\n" + classes_text(p);
  if (!r.faults.empty()) s += "faults:\n" + r.faults.to_string();
  return s;
}

nlohmann::json profile_json(const CoreProfile& p) {
  const TimingResult& r = p.result;
  const profile::Roofline& rf = p.roofline;
  nlohmann::json j;
  j["chip"] = p.chip;
  j["total_ns"] = ns(r.total);
  j["total_ps"] = r.total.v;
  j["launch_ns"] = ns(r.launch);
  j["instructions"] = r.instructions;
  nlohmann::json engines = nlohmann::json::object();
  for (isa::Engine e : isa::kAllEngines) {
    const EngineStats& s = r.engines[static_cast<size_t>(e)];
    nlohmann::json on = nlohmann::json::object();
    for (isa::Engine q : isa::kAllEngines)
      if (s.waited_on[static_cast<size_t>(q)].v > 0)
        on[std::string(isa::engine_name(q))] = ns(s.waited_on[static_cast<size_t>(q)]);
    engines[std::string(isa::engine_name(e))] = {
        {"instructions", s.instructions},
        {"busy_ns", ns(s.busy)},
        {"busy_share", share(s.busy, r.total)},
        {"wait_semaphore_ns", ns(s.stalled(Stall::kSemaphore))},
        {"waited_on_ns", on},
        {"wait_dma_ns", ns(s.stalled(Stall::kDma))},
        {"wait_port_ns", ns(s.stalled(Stall::kPort))},
        {"wait_own_ns", ns(s.stalled(Stall::kOwn))},
        {"wait_barrier_ns", ns(s.stalled(Stall::kBarrier))},
        {"idle_ns", ns(s.idle(r.total))},
        {"finish_ns", ns(s.finish)}};
  }
  j["engines"] = engines;
  const TimingResult::Bound b = r.bound();
  nlohmann::json shares = nlohmann::json::object();
  for (isa::Engine e : isa::kAllEngines)
    shares[std::string(isa::engine_name(e))] = b.engine_share[static_cast<size_t>(e)];
  shares["dma"] = b.dma_share;
  j["bound"] = {{"verdict", b.verdict}, {"name", bound_name(b.verdict)}, {"busy_shares", shares}};
  j["mfu"] = rf.mfu;
  j["hfu"] = rf.hfu;

  nlohmann::json classes = nlohmann::json::array();
  for (const InstructionClass& c : p.classes) {
    const double busy_s = static_cast<double>(c.busy.v) * 1e-12;
    classes.push_back({{"engine", std::string(isa::engine_name(c.engine))},
                       {"opcode", std::string(isa::mnemonic(c.op))},
                       {"count", c.count},
                       {"busy_ns", ns(c.busy)},
                       {"busy_share", share(c.busy, r.total)},
                       {"flops", c.flops},
                       {"issued_flops", c.issued_flops},
                       {"hbm_bytes", c.hbm_bytes},
                       {"tflops_while_busy", busy_s > 0 ? c.issued_flops / busy_s * 1e-12 : 0.0}});
  }
  j["roofline"] = {{"verdict", rf.verdict},
                   {"name", bound_name(rf.verdict)},
                   {"roof", rf.roof},
                   {"flops", rf.flops},
                   {"issued_flops", rf.issued_flops},
                   {"hbm_bytes", rf.hbm_bytes},
                   {"intensity_flops_per_byte", rf.intensity},
                   {"ridge_flops_per_byte", rf.ridge},
                   {"achieved_tflops", rf.achieved_flops * 1e-12},
                   {"peak_tflops", rf.peak_flops * 1e-12},
                   {"attainable_tflops", rf.attainable_flops * 1e-12},
                   {"mfu", rf.mfu},
                   {"hfu", rf.hfu},
                   {"mfu_dtype", rf.mfu_dtype},
                   {"hbm_gbps", rf.hbm_bytes_per_s * 1e-9},
                   {"hbm_peak_gbps", rf.hbm_peak * 1e-9},
                   {"hbm_share", rf.hbm_share},
                   {"chip_hbm_gbps", p.chip_hbm_bytes_per_s * 1e-9},
                   {"classes", classes}};

  const ProfilePath& cp = p.path;
  nlohmann::json per = nlohmann::json::object(), per_share = nlohmann::json::object(),
                 edges = nlohmann::json::object(), top = nlohmann::json::array();
  for (int l = 0; l < kNumPathLanes; ++l) {
    per[path_lane_name(l)] = ns(cp.per_lane[static_cast<size_t>(l)]);
    per_share[path_lane_name(l)] = share(cp.per_lane[static_cast<size_t>(l)], cp.time);
  }
  for (int k = 0; k < kNumPathEdges; ++k)
    edges[path_edge_name(static_cast<PathEdge>(k))] = cp.edges[static_cast<size_t>(k)];
  for (const PathItem& it : cp.top) {
    nlohmann::json x = {{"name", it.name},
                        {"engine", it.transfer ? "dma" : std::string(isa::engine_name(it.engine))},
                        {"transfer", it.transfer},
                        {"index", it.index},
                        {"line", it.line},
                        {"source", it.source},
                        {"instructions", it.statics},
                        {"count", it.count},
                        {"time_ns", ns(it.time)},
                        {"share", share(it.time, cp.time)}};
    if (it.transfer) x["trigger"] = std::string(isa::engine_name(it.engine));
    top.push_back(x);
  }
  j["critical_path"] = {{"length", cp.length},  {"time_ns", ns(cp.time)},
                        {"per_engine_ns", per}, {"per_engine_share", per_share},
                        {"released_by", edges}, {"top", top}};
  j["dma"] = {{"transfers", r.dma.transfers},
              {"hbm_read_bytes", r.dma.hbm_read_bytes},
              {"hbm_write_bytes", r.dma.hbm_write_bytes}};
  nlohmann::json faults = nlohmann::json::array();
  for (const mem::Fault& f : r.faults.all())
    faults.push_back({{"kind", std::string(mem::fault_kind_name(f.kind))},
                      {"instruction", f.instruction},
                      {"message", f.message}});
  j["faults"] = faults;
  return j;
}

}  // namespace trnsim::core
