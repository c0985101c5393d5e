// `trnsim serve`: time to first token and time per output token of one batch of requests
// (planner/serve.h), with the prefill's and the last decode step's per-op tables, or --json
// (keys ttft_ms, tpot_ms, output_tokens_per_s as scripts rely on).
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
#include "planner/serve.h"

namespace trnsim::cli {

namespace {

struct ServeCmdOptions {
  std::string model, system, chip = "trn2", runtime = std::string(graph::kInGraphRuntime);
  std::vector<std::string> sets;
  int tp = 0, lnc = 1, samples = 3;
  int64_t batch = 1, input = 128, output = 128, bucket = 0;
  bool json = false, no_search = false;
};

void run_serve(const ServeCmdOptions& o, Io& io) {
  if (o.model.empty()) throw InputError("serve", "--model", "name a model (trnsim model --list)");
  planner::ServeOptions so;
  so.system = o.system;
  so.chip = o.chip;
  for (const auto& s : o.sets) so.overrides.push_back(arch::parse_override(s));
  so.tp = o.tp;
  so.lnc = o.lnc;
  so.batch = o.batch;
  so.input_tokens = o.input;
  so.output_tokens = o.output;
  so.bucket = o.bucket;
  so.decode_samples = o.samples;
  so.runtime = o.runtime;
  so.search_tilings = !o.no_search;
  const planner::ServeResult r = planner::serve(graph::load_model_config(o.model), so);
  print_planner_result(io, o.json, r.to_json(), r.text(), o.sets);
}

}  // namespace

void setup_serve_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<ServeCmdOptions>();
  auto* sub = app.add_subcommand(
      "serve", "time to first token and per output token of a batch of requests on a system");
  sub->add_option("--model,-m", o->model, "built-in model (trnsim model --list) or config.json");
  sub->add_option("--system", o->system, "system (spec/systems); default: one chip of --chip");
  sub->add_option("--chip", o->chip, "chip, when no --system")->capture_default_str();
  sub->add_option("--set", o->sets,
                  "override a chip key, or a system key (server., cluster., collective.)");
  sub->add_option("--tp", o->tp,
                  "tensor-parallel ranks (default: every core the model splits over)")
      ->check(CLI::Range(1, 65536));
  sub->add_option("--lnc", o->lnc, "physical cores per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  sub->add_option("--batch,-b", o->batch, "sequences decoded together")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  sub->add_option("--input-tokens", o->input, "prompt tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--output-tokens", o->output, "generated tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--bucket", o->bucket, "prefill positions (default: power of two >= the prompt)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--decode-samples", o->samples, "KV lengths at which decode steps are timed")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sub->add_option("--runtime", o->runtime, "collective runtime of the all-reduces (spec/runtime)")
      ->capture_default_str();
  sub->add_flag("--no-search", o->no_search, "take each linear's first legal tiling");
  sub->add_flag("--json", o->json, "the figures as JSON, with a manifest");
  sub->callback([o, &io] { run_serve(*o, io); });
}

}  // namespace trnsim::cli
