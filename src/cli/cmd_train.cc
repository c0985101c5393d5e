// `trnsim train`: one training step of a model under a parallel plan on a system of servers
// (planner/train.h): step time, sequences and tokens per second, MFU, memory per chip and the
// breakdown, or --json (keys step_time_s, sequences_per_s, tokens_per_s, mfu,
// memory_per_chip_bytes as scripts rely on).
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "graph/kernel_cache.h"
#include "graph/model_config.h"
#include "planner/train.h"

namespace trnsim::cli {

namespace {

struct TrainCmdOptions {
  std::string model, system, runtime = std::string(graph::kInGraphRuntime), recompute = "none";
  std::string attention = "flash";
  bool sequence_parallel = false;
  std::vector<std::string> sets;
  int tp = 1, pp = 1, dp = 1, lnc = 0, zero = 1, virtual_stages = 1, ep = 1;
  int64_t servers = 0, seq = 2048, global_batch = 1024, micro_batch = 1;
  bool json = false, no_search = false;
};

void run_train(const TrainCmdOptions& o, Io& io) {
  if (o.model.empty()) throw InputError("train", "--model", "name a model (trnsim model --list)");
  if (o.system.empty()) throw InputError("train", "--system", "name a system (spec/systems)");
  planner::TrainOptions t;
  t.system = o.system;
  t.servers = o.servers;
  for (const auto& s : o.sets) t.overrides.push_back(arch::parse_override(s));
  t.tp = o.tp;
  t.pp = o.pp;
  t.dp = o.dp;
  t.ep = o.ep;
  t.lnc = o.lnc;
  t.zero = o.zero;
  t.virtual_stages = o.virtual_stages;
  t.seq = o.seq;
  t.global_batch = o.global_batch;
  t.micro_batch = o.micro_batch;
  t.recompute = planner::parse_recompute(o.recompute, "train", "--recompute");
  t.eager_attention = o.attention == "eager";
  t.sequence_parallel = o.sequence_parallel;
  t.runtime = o.runtime;
  t.search_tilings = !o.no_search;
  const planner::TrainResult r = planner::train(graph::load_model_config(o.model), t);
  print_planner_result(io, o.json, r.to_json(), r.text(), o.sets);
}

}  // namespace

void setup_train_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<TrainCmdOptions>();
  auto* sub = app.add_subcommand(
      "train", "one training step of a model under a TP x PP x DP plan on a system of servers");
  sub->add_option("--model,-m", o->model, "built-in model (trnsim model --list) or config.json");
  sub->add_option("--system", o->system, "system (spec/systems)");
  sub->add_option("--servers", o->servers, "servers of the system (default: the system file's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--set", o->sets,
                  "override a chip key, or a system key (server., cluster., collective.)");
  sub->add_option("--tp", o->tp, "tensor-parallel ranks (inside a server)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_option("--pp", o->pp, "pipeline stages")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  sub->add_option("--dp", o->dp, "data-parallel replicas")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--lnc", o->lnc, "physical cores per rank (default: the system's)")
      ->check(CLI::Range(1, 8));
  sub->add_option("--ep", o->ep,
                  "MoE: expert-parallel ranks inside the tp group (each holds experts / ep)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  sub->add_option("--virtual-stages", o->virtual_stages,
                  "chunks per pipeline stage: the interleaved 1F1B schedule (1: plain 1F1B)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  sub->add_option("--zero", o->zero, "ZeRO stage: 0, 1, 2 or 3")
      ->capture_default_str()
      ->check(CLI::Range(0, 3));
  sub->add_option("--seq,-s", o->seq, "tokens per sequence")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--global-batch", o->global_batch, "sequences per step, all replicas")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  sub->add_option("--micro-batch", o->micro_batch, "sequences per micro-batch")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option(
         "--recompute", o->recompute,
         "activation recomputation: none, selective (each layer's attention again in the backward) "
         "or full (each layer's forward again)")
      ->capture_default_str();
  add_attention_option(sub, o->attention);
  sub->add_flag("--sequence-parallel", o->sequence_parallel,
                "sequence parallelism (Megatron's, NxD's sequence_parallel_enabled): norms and "
                "residual adds on T / tp tokens, each TP all-reduce a reduce-scatter and an "
                "all-gather");
  sub->add_option("--runtime", o->runtime, "collective runtime (spec/runtime)")
      ->capture_default_str();
  sub->add_flag("--no-search", o->no_search, "take each linear's first legal tiling");
  sub->add_flag("--json", o->json, "the figures as JSON, with a manifest");
  sub->callback([o, &io] { run_train(*o, io); });
}

}  // namespace trnsim::cli
