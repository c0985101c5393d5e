// `trnsim model`: a model (a built-in family from spec/models or a config.json) compiled for a
// simulated chip and timed op by op (graph/model_run.h): the per-op table and the totals,
// --json, and --trace (Chrome / Perfetto JSON of the forward's kernels).
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/atomic_file.h"
#include "base/error.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "graph/kernel_cache.h"
#include "graph/model_config.h"
#include "graph/model_run.h"

namespace trnsim::cli {

namespace {

struct ModelOptions {
  std::string model;
  std::string chip = "trn2";
  std::vector<std::string> sets;
  int tp = 0, ep = 1;
  int64_t batch = 1, seq = 128, layers = -1;
  bool json = false, list = false, no_fuse = false, no_search = false, graph = false;
  bool train = false, prefetch = false, apart = false;
  int64_t micro_batches = 1;
  double lr = 1e-4, weight_decay = 0.0;
  std::string trace;
  std::string system, runtime = std::string(graph::kInGraphRuntime);
  std::string weights = "bf16", quantize = "all", attention = "flash";
  int lnc = 1;
  bool sequence_parallel = false;
};

void run_model_cmd(const ModelOptions& o, Io& io) {
  if (o.list || o.model.empty()) {
    if (o.json) {
      io.out << json_text(graph::list_models()) << "\n";
      return;
    }
    io.out << "Models in " << (arch::spec_dir() / "models").string() << ":\n";
    for (const auto& m : graph::list_models()) io.out << "  " << m << "\n";
    io.out << "Run one with `trnsim model NAME --chip trn2 --batch 1 --seq 2048`, or give a "
              "config.json path.\n";
    return;
  }
  if (!o.trace.empty() && std::filesystem::path(o.trace).extension() != ".json")
    throw InputError("--trace", o.trace, "the trace is Chrome / Perfetto JSON: name it .json");
  graph::ModelRunOptions ro;
  ro.chip = o.chip;
  ro.system = o.system;
  ro.runtime = o.runtime;
  ro.lnc = o.lnc;
  for (const auto& s : o.sets) ro.overrides.push_back(arch::parse_override(s));
  ro.tp = o.tp;
  ro.ep = o.ep;
  ro.weights = o.weights;
  ro.quantize_mlp_only = o.quantize == "mlp";
  ro.eager_attention = o.attention == "eager";
  ro.sequence_parallel = o.sequence_parallel;
  ro.batch = o.batch;
  ro.seq = o.seq;
  ro.layers = o.layers;
  ro.fuse = !o.no_fuse;
  ro.search_tilings = !o.no_search;
  ro.train = o.train;
  ro.prefetch = o.prefetch;
  ro.overlap_kernels = !o.apart;
  ro.micro_batches = o.micro_batches;
  ro.optimizer.lr = o.lr;
  ro.optimizer.weight_decay = o.weight_decay;
  const graph::ModelConfig m = graph::load_model_config(o.model);
  const graph::ModelResult r = graph::run_model(m, ro);
  if (!o.trace.empty())
    write_file_atomically(o.trace, "--trace",
                          [&](std::ostream& f) { f << r.trace_json().dump() << "\n"; });
  if (o.json) {
    nlohmann::json j = r.to_json();
    j["manifest"] = result_manifest(io, o.sets);
    io.out << json_text(j) << "\n";
    return;
  }
  if (o.graph) io.out << r.graph_text << "\n";
  io.out << r.table();
  if (!r.fusion.applied.empty()) {
    io.out << "fusions:";
    for (const auto& a : r.fusion.applied) io.out << " " << a << ";";
    io.out << "\n";
  }
}

}  // namespace

void add_weight_options(CLI::App* sub, std::string& weights, std::string& quantize) {
  sub->add_option("--weights", weights,
                  "weight-only quantization of the decoder layers' linears, per-channel scales "
                  "(NxD Inference's quantization_dtype): bf16 (none), int8, fp8 (the chip's "
                  "E4M3), fp8_e4m3, fp8_e4m3fn, fp8_e5m2")
      ->capture_default_str();
  sub->add_option("--quantize", quantize,
                  "which linears --weights quantizes: all (attention and MLP) or mlp (the MLPs "
                  "and MoE experts, as the Llama-3.3-70B FP8 tutorial's checkpoint)")
      ->check(CLI::IsMember({"all", "mlp"}))
      ->capture_default_str();
}

void add_attention_option(CLI::App* sub, std::string& attention) {
  sub->add_option("--attention", attention,
                  "attention kernels: flash, or eager (the scores q k^T, their softmax and the "
                  "product with v as three ops with the [S, S] tensors in HBM, as Megatron-LM's "
                  "CoreAttention and Hugging Face's eager attention compute it)")
      ->check(CLI::IsMember({"flash", "eager"}))
      ->capture_default_str();
}

nlohmann::json result_manifest(const Io& io, const std::vector<std::string>& overrides) {
  return {{"trnsim", TRNSIM_VERSION},
          {"commit", commit()},
          {"command", io.command_line},
          {"overrides", overrides},
          {"spec_dir", arch::spec_dir().string()}};
}

void print_planner_result(Io& io, bool json, nlohmann::json result, const std::string& text,
                          const std::vector<std::string>& overrides) {
  if (!json) {
    io.out << text;
    return;
  }
  result["manifest"] = result_manifest(io, overrides);
  io.out << json_text(result) << "\n";
}

void setup_model_command(CLI::App& app, Io& io) {
  auto o = std::make_shared<ModelOptions>();
  auto* sub = app.add_subcommand(
      "model",
      "a model's forward pass (or training step, --train) compiled for a simulated chip: per-op "
      "table and totals");
  sub->add_option("model", o->model, "built-in model (spec/models; --list) or a config.json path");
  sub->add_option("--chip", o->chip, "chip name or .toml path")->capture_default_str();
  sub->add_option("--set", o->sets,
                  "override a chip key (--set core.tensor.clock_ghz=3.0), or with --system a "
                  "system key (server., cluster., collective.)");
  sub->add_option("--system", o->system, "a system (spec/systems): ranks across its chips");
  sub->add_option("--lnc", o->lnc, "physical cores per rank")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  sub->add_option("--runtime", o->runtime, "collective runtime of the all-reduces (spec/runtime)")
      ->capture_default_str();
  sub->add_option("--tp", o->tp, "tensor-parallel ranks (default: every physical core)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--ep", o->ep,
                  "MoE: expert-parallel ranks inside the tp group (each holds experts / ep)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  add_weight_options(sub, o->weights, o->quantize);
  add_attention_option(sub, o->attention);
  sub->add_flag("--sequence-parallel", o->sequence_parallel,
                "sequence parallelism over the tp ranks: norms and residual adds on T / tp tokens, "
                "each all-reduce a reduce-scatter and an all-gather");
  sub->add_option("--batch,-b", o->batch, "sequences")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--seq,-s", o->seq, "tokens per sequence")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  sub->add_option("--layers", o->layers, "run only the first N layers")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_flag(
      "--no-fuse", o->no_fuse,
      "no fusion but what the kernels require (RoPE and q/k norms stay inside attention)");
  sub->add_flag("--no-search", o->no_search,
                "take each linear's first legal tiling instead of timing them");
  sub->add_flag("--graph", o->graph, "print the fused graph before the table");
  sub->add_flag("--json", o->json, "the figures as JSON, with a manifest");
  sub->add_option("--trace", o->trace,
                  "write the forward's kernels as a Perfetto / Chrome trace (.json)");
  sub->add_flag("--prefetch", o->prefetch,
                "what-if: each linear's first weight blocks load under the collectives and "
                "latency-bound kernels before it (docs/models.md)");
  sub->add_flag("--kernels-apart", o->apart,
                "time each kernel alone, back to back, instead of each beside the kernel before "
                "it (docs/models.md: kernels timed together)");
  sub->add_flag("--train", o->train,
                "a training step instead of a forward: forward, cross-entropy loss, backward and "
                "one AdamW step (bf16 weights, fp32 master weights and moments)");
  sub->add_option("--micro-batches", o->micro_batches,
                  "gradient accumulation (--train): forward and backward over N micro-batches of "
                  "--batch x --seq tokens, then one optimizer step")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sub->add_option("--lr", o->lr, "AdamW learning rate (--train)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  sub->add_option("--weight-decay", o->weight_decay, "AdamW weight decay (--train)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_flag("--list", o->list, "list the built-in models");
  sub->callback([o, &io] { run_model_cmd(*o, io); });
}

}  // namespace trnsim::cli
