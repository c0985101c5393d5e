#include "planner/plan_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "base/error.h"
#include "fabric/system.h"
#include "graph/kernel_cache_pool.h"

namespace trnsim::planner {

namespace {

// A rank's kernels shard over its LNC cores too: the heads split tp x lnc ways.
std::vector<int> every_tp(const graph::ModelConfig& m, int64_t server_ranks, int lnc) {
  std::vector<int> out;
  for (int t = 1; t <= server_ranks; t *= 2)
    if (m.heads % (int64_t{t} * lnc) == 0) out.push_back(t);
  return out;
}

std::vector<int> every_pp(const graph::ModelConfig& m) {
  std::vector<int> out;
  for (int p = 1; p <= m.layers; ++p)
    if (m.layers % p == 0) out.push_back(p);
  return out;
}

// The expert parallelism a MoE plan tries by default: 1, inside each TP group (tp), and
// across 2, 4, ... replicas up to all of them; a dense model's is 1.
std::vector<int> every_ep(const graph::ModelConfig& m, int tp, int dp) {
  std::vector<int> out{1};
  if (!m.moe()) return out;
  if (tp > 1) out.push_back(tp);
  for (int e = 2; e <= dp; e *= 2)
    if (dp % e == 0) out.push_back(tp * e);
  return out;
}

// The step's parts in PlanBound order (s).
std::array<double, 7> step_parts(const TrainResult& r) {
  return {r.compute_s - r.tp_comm_s - r.ep_comm_s,
          r.tp_comm_s,
          r.ep_comm_s,
          r.pp_bubble_s,
          r.pp_comm_s,
          r.dp_comm_s,
          r.optimizer_s};
}

double gib(int64_t b) { return static_cast<double>(b) / 1073741824.0; }

std::string plan_text(const TrainResult& r) {
  return fmt::format("TP {}{} PP {} DP {} mb {} ZeRO-{}{}", r.tp,
                     r.ep > 1 ? fmt::format(" EP {}", r.ep) : "", r.pp, r.dp, r.micro_batch, r.zero,
                     r.recompute == Recompute::kNone
                         ? std::string()
                         : fmt::format(" {} recompute", name(r.recompute)));
}

}  // namespace

const char* plan_bound_name(PlanBound b) {
  static constexpr std::array<const char*, 7> kNames{
      "compute",     "TP all-reduces", "EP all-to-alls", "pipeline bubble",
      "stage sends", "DP gradients",   "optimizer"};
  return kNames[static_cast<size_t>(b)];
}

PlanBound plan_bound(const TrainResult& r) {
  const std::array<double, 7> parts = step_parts(r);
  return static_cast<PlanBound>(std::max_element(parts.begin(), parts.end()) - parts.begin());
}

PlanSearchResult search_plans(const graph::ModelConfig& m, const PlanSearchOptions& o) {
  if (o.base.system.empty()) throw InputError("plan", "system", "name a system (spec/systems)");
  const fabric::SplitOverrides over = fabric::split_overrides(o.base.overrides);
  std::vector<arch::Override> sys_over = over.system;
  if (o.base.servers > 0)
    sys_over.push_back(arch::parse_override(fmt::format("cluster.servers={}", o.base.servers)));
  fabric::SystemSpec sys = fabric::load_system(o.base.system, sys_over);
  if (!over.chip.empty()) sys.chip = arch::load_chip(sys.chip_name, over.chip);
  PlanSearchResult res;
  res.model = m.name;
  res.system = sys.name;
  res.servers = sys.servers;
  res.chips = sys.chips();
  for (const auto* list : {&o.tp, &o.pp, &o.lnc, &o.virtual_stages, &o.ep})
    for (int v : *list)
      if (v < 1)
        throw InputError("plan",
                         list == &o.tp    ? "tp"
                         : list == &o.pp  ? "pp"
                         : list == &o.lnc ? "lnc"
                         : list == &o.ep  ? "ep"
                                          : "virtual-stages",
                         "degrees are at least 1");
  const std::vector<int> lncs =
      o.lnc.empty() ? std::vector<int>{o.base.lnc > 0 ? o.base.lnc : sys.lnc} : o.lnc;
  std::vector<TrainOptions> plans;
  for (int lnc : lncs) {
    if (sys.chip.chip.cores % lnc != 0)
      throw InputError("plan", "lnc",
                       fmt::format("{} does not divide a {} chip's {} cores", lnc,
                                   sys.chip.meta.name, sys.chip.chip.cores));
    const int64_t ranks = sys.chips() * sys.chip.chip.cores / lnc;
    res.ranks = std::max(res.ranks, ranks);
    const int64_t server_ranks = sys.chips_per_server * sys.chip.chip.cores / lnc;
    const std::vector<int> tps = o.tp.empty() ? every_tp(m, server_ranks, lnc) : o.tp;
    const std::vector<int> pps = o.pp.empty() ? every_pp(m) : o.pp;
    for (int tp : tps)
      for (int pp : pps) {
        if (ranks % (int64_t{tp} * pp) != 0) continue;
        const auto dp = static_cast<int>(ranks / (int64_t{tp} * pp));
        for (int64_t mb : o.micro_batch)
          for (int zero : o.zero) {
            if (dp == 1 && zero != o.zero.front()) continue;  // ZeRO shards nothing on one replica
            for (const Recompute rc : o.recompute)
              for (int v : o.virtual_stages)
                for (int ep : o.ep.empty() ? every_ep(m, tp, dp) : o.ep) {
                  if (v > 1 && pp == 1) continue;  // nothing to interleave
                  TrainOptions t = o.base;
                  t.tp = tp, t.pp = pp, t.dp = dp, t.lnc = lnc, t.ep = ep;
                  t.micro_batch = mb, t.zero = zero, t.recompute = rc, t.virtual_stages = v;
                  plans.push_back(std::move(t));
                }
          }
      }
  }
  res.enumerated = plans.size();

  // Plans of one (LNC, TP, micro-batch) share every kernel: one task each, on `jobs` threads, each
  // task with caches of its own (a pool is not thread-safe). Results land by plan index, so
  // the outcome does not depend on the threads.
  std::map<std::tuple<int, int, int64_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < plans.size(); ++i)
    groups[{plans[i].lnc, plans[i].tp, plans[i].micro_batch}].push_back(i);
  std::vector<std::vector<size_t>> tasks;
  for (auto& g : groups) tasks.push_back(std::move(g.second));
  std::vector<PlanOutcome> outcomes(plans.size());
  std::vector<std::string> errors(plans.size());  // InputError messages: illegal plans
  std::vector<int> simulated(tasks.size(), 0);
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t k = next++; k < tasks.size(); k = next++) {
      graph::KernelCachePool caches;
      try {
        for (size_t i : tasks[k]) {
          TrainOptions t = plans[i];
          t.kernel_caches = &caches;
          PlanOutcome& out = outcomes[i];
          try {
            out.result = train_memory(m, t);
            if (out.result.fits()) {
              out.result = train(m, t);
              out.timed = true;
              out.bound = plan_bound(out.result);
            }
          } catch (const InputError& e) {
            errors[i] = e.what();
          }
          out.plan = plans[i];
        }
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
      simulated[k] = caches.kernels_simulated();
    }
  };
  const int jobs = std::max(1, std::min<int>(o.jobs, static_cast<int>(tasks.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  for (int n : simulated) res.kernels_simulated += n;

  std::vector<PlanOutcome> timed;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!errors[i].empty()) {
      ++res.illegal;
      if (std::find(res.illegal_reasons.begin(), res.illegal_reasons.end(), errors[i]) ==
          res.illegal_reasons.end())
        res.illegal_reasons.push_back(errors[i]);
      continue;
    }
    PlanOutcome& out = outcomes[i];
    if (out.timed) {
      timed.push_back(std::move(out));
    } else {
      ++res.pruned_memory;
      if (!res.least_memory ||
          out.result.memory_per_chip_bytes < res.least_memory->result.memory_per_chip_bytes)
        res.least_memory = std::move(out);
    }
  }
  res.timed = timed.size();
  // Fastest first; ties (equal times) by the order plans were built in.
  std::stable_sort(timed.begin(), timed.end(), [](const PlanOutcome& a, const PlanOutcome& b) {
    return a.result.step_time_s < b.result.step_time_s;
  });
  if (timed.size() > o.top) timed.resize(o.top);
  res.best = std::move(timed);
  if (!res.best.empty()) res.least_memory.reset();
  return res;
}

nlohmann::json PlanSearchResult::to_json() const {
  nlohmann::json best_j = nlohmann::json::array();
  for (const PlanOutcome& p : best) {
    nlohmann::json j = p.result.to_json();
    j["bound"] = plan_bound_name(p.bound);
    best_j.push_back(std::move(j));
  }
  nlohmann::json j = {{"model", model},
                      {"system", system},
                      {"servers", servers},
                      {"chips", chips},
                      {"ranks", ranks},
                      {"enumerated", enumerated},
                      {"illegal", illegal},
                      {"illegal_reasons", illegal_reasons},
                      {"pruned_memory", pruned_memory},
                      {"timed", timed},
                      {"kernels_simulated", kernels_simulated},
                      {"best", best_j}};
  j["least_memory"] = least_memory ? least_memory->result.to_json() : nlohmann::json();
  return j;
}

std::string PlanSearchResult::text() const {
  std::string out =
      fmt::format("{} on {} x {} ({} chips): {} plans, {} illegal, {} do not fit, {} timed\n",
                  model, servers, system, chips, enumerated, illegal, pruned_memory, timed);
  if (best.empty()) {
    out += "no plan fits";
    if (least_memory)
      out += fmt::format(": the closest, {}, needs {:.2f} GiB per chip of {:.2f} GiB",
                         plan_text(least_memory->result),
                         gib(least_memory->result.memory_per_chip_bytes),
                         gib(least_memory->result.hbm_per_chip_bytes));
    return out + "\n";
  }
  // An EP column when a listed plan has expert parallelism (a MoE's search).
  const bool ep =
      std::any_of(best.begin(), best.end(), [](const PlanOutcome& p) { return p.result.ep != 1; });
  auto ep_col = [&](const auto& v) { return ep ? fmt::format(" {:>4}", v) : std::string(); };
  out += fmt::format(
      "{:>4}  {:>3} {:>4}{} {:>4} {:>5} {:>3} {:>4} {:>9}  {:>9} {:>11} {:>6} {:>9}  {}\n", "rank",
      "LNC", "TP", ep_col("EP"), "PP", "DP", "mb", "ZeRO", "recompute", "step s", "tokens/s", "MFU",
      "GiB/chip", "bound");
  for (size_t i = 0; i < best.size(); ++i) {
    const TrainResult& r = best[i].result;
    out += fmt::format(
        "{:>4}  {:>3} {:>4}{} {:>4} {:>5} {:>3} {:>4} {:>9}  {:>9.4g} {:>11.0f} {:>5.1f}% "
        "{:>9.1f}  {} ({:.0f}% of the step)\n",
        i + 1, r.lnc, r.tp, ep_col(r.ep),
        r.virtual_stages > 1 ? fmt::format("{}x{}", r.pp, r.virtual_stages) : std::to_string(r.pp),
        r.dp, r.micro_batch, r.zero, name(r.recompute), r.step_time_s, r.tokens_per_s, 100 * r.mfu,
        gib(r.memory_per_chip_bytes), plan_bound_name(best[i].bound),
        r.step_time_s > 0 ? 100 * step_parts(r)[static_cast<size_t>(best[i].bound)] / r.step_time_s
                          : 0.0);
  }
  return out;
}

}  // namespace trnsim::planner
