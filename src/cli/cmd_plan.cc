// `trnsim plan`: the plan search (planner/plan_search.h): every legal TP x PP x DP plan of a
// model on a system, with the micro-batch sizes, ZeRO stages and recomputation asked for,
// pruned by memory, the rest timed and ranked by step time, each with what bounds it; --json
// for scripts (keys enumerated, illegal, pruned_memory, timed, best[] with train's keys and
// `bound`).
#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "graph/kernel_cache.h"
#include "graph/model_config.h"
#include "planner/plan_search.h"

namespace trnsim::cli {

namespace {

struct PlanCmdOptions {
  std::string model, system, runtime = std::string(graph::kInGraphRuntime);
  std::vector<std::string> sets, recompute{"none", "selective", "full"};
  std::vector<int> tp, pp, zero{0, 1}, virtual_stages{1};
  std::vector<int64_t> micro_batch{1, 2, 4};
  std::vector<int> lnc, ep;
  int64_t servers = 0, seq = 2048, global_batch = 1024;
  size_t top = 10;
  int jobs = 0;  // 0: the host's cores
  std::string attention = "flash";
  bool sequence_parallel = false;
  bool json = false, no_search = false;
};

void run_plan(const PlanCmdOptions& o, Io& io) {
  if (o.model.empty()) throw InputError("plan", "--model", "name a model (trnsim model --list)");
  if (o.system.empty()) throw InputError("plan", "--system", "name a system (spec/systems)");
  planner::PlanSearchOptions p;
  p.base.system = o.system;
  p.base.servers = o.servers;
  for (const auto& s : o.sets) p.base.overrides.push_back(arch::parse_override(s));
  p.lnc = o.lnc;
  p.base.seq = o.seq;
  p.base.global_batch = o.global_batch;
  p.base.runtime = o.runtime;
  p.base.search_tilings = !o.no_search;
  p.base.eager_attention = o.attention == "eager";
  p.base.sequence_parallel = o.sequence_parallel;
  p.tp = o.tp;
  p.pp = o.pp;
  p.micro_batch = o.micro_batch;
  p.zero = o.zero;
  p.virtual_stages = o.virtual_stages;
  p.ep = o.ep;
  p.recompute.clear();
  for (const std::string& r : o.recompute)
    p.recompute.push_back(planner::parse_recompute(r, "plan", "--recompute"));
  p.top = o.top;
  p.jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const planner::PlanSearchResult r = planner::search_plans(graph::load_model_config(o.model), p);
  print_planner_result(io, o.json, r.to_json(), r.text(), o.sets);
}

}  // namespace

void setup_plan_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<PlanCmdOptions>();
  auto* sub = app.add_subcommand(
      "plan",
      "search the TP x PP x DP plans of a model on a system: prune by memory, rank by step time");
  sub->add_option("--model,-m", o->model, "built-in model (trnsim model --list) or config.json");
  sub->add_option("--system", o->system, "system (spec/systems)");
  sub->add_option("--servers", o->servers, "servers of the system (default: the system file's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--set", o->sets,
                  "override a chip key, or a system key (server., cluster., collective.)");
  sub->add_option("--tp", o->tp,
                  "tensor-parallel degrees to try (default: every power of two up to a server's "
                  "ranks that divides the heads)")
      ->check(CLI::Range(1, 65536));
  sub->add_option("--pp", o->pp, "pipeline degrees to try (default: every divisor of the layers)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--micro-batch", o->micro_batch, "micro-batch sizes to try")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--virtual-stages", o->virtual_stages,
                  "interleaved chunks per pipeline stage to try (1: plain 1F1B)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--zero", o->zero,
                  "ZeRO stages to try (0-3; default 0 and 1, what Neuron Distributed runs)")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  sub->add_option("--recompute", o->recompute, "recomputation to try: none, selective, full")
      ->capture_default_str();
  sub->add_option("--lnc", o->lnc, "physical cores per rank to try (default: the system's)")
      ->check(CLI::Range(1, 8));
  sub->add_option("--ep", o->ep,
                  "MoE expert parallelism to try (as trnsim train --ep; default: 1, TP, and TP x "
                  "each power of two up to DP)")
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--seq,-s", o->seq, "tokens per sequence")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--global-batch", o->global_batch, "sequences per step, all replicas")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  sub->add_option("--top", o->top, "plans listed (all are counted)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{100000}));
  sub->add_option("--jobs,-j", o->jobs, "threads (default: the host's cores)")
      ->check(CLI::Range(1, 1024));
  add_attention_option(sub, o->attention);
  sub->add_flag("--sequence-parallel", o->sequence_parallel,
                "sequence parallelism in every plan with TP > 1 (trnsim train's)");
  sub->add_option("--runtime", o->runtime, "collective runtime (spec/runtime)")
      ->capture_default_str();
  sub->add_flag("--no-search", o->no_search, "take each linear's first legal tiling");
  sub->add_flag("--json", o->json, "the figures as JSON, with a manifest");
  sub->callback([o, &io] { run_plan(*o, io); });
}

}  // namespace trnsim::cli
