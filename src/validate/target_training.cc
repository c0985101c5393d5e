// VALIDATION.md s8: training throughput of GPT-3 6.7B (Megatron-LM) and Llama-2 7B (NxD) on
// 16 trn1.32xlarge servers, TP=8 within a server, DP=64, micro-batch 1, global batch 1024, so
// each data-parallel replica accumulates gradients over 1024 / 64 = 16 micro-batches per step.
// trnsim: one replica's step (graph/backward.h) on the server's fabric: 16 forward-backward
// passes, every kernel simulated, the tensor-parallel all-reduces under the neuron-2.28
// runtime, then one AdamW step; seq/s = the global batch over that step time. Nothing is
// fitted on these figures. Not modelled (so not in trnsim's time): the data-parallel gradient
// reduction across the 64 replicas (ZeRO-1's reduce-scatter and all-gather over EFA, which
// the frameworks overlap with the backward in part) and any activation recomputation the
// measured configurations used (not stated in the table).
#include <fmt/format.h>

#include "graph/model_config.h"
#include "graph/model_run.h"
#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

struct Row {
  const char* model;
  const char* framework;
  int64_t seq;
  double seq_per_s;
};

constexpr int kTp = 8, kDp = 64;
constexpr int64_t kGlobalBatch = 1024;

constexpr Row kRows[] = {
    {"gpt3-6.7b", "Megatron-LM (XLA, BF16 + SR)", 2048, 140.0},
    {"llama-2-7b", "NxD (Neuron 2.21)", 4096, 95.14},
};

}  // namespace

std::vector<Record> training_records() {
  std::vector<Record> out;
  for (const Row& r : kRows) {
    graph::ModelRunOptions o;
    o.system = "trn1.32xlarge";
    o.tp = kTp;
    o.seq = r.seq;
    o.train = true;
    o.micro_batches = kGlobalBatch / kDp;
    const graph::ModelResult m = graph::run_model(graph::load_model_config(r.model), o);
    const double seq_per_s = static_cast<double>(kGlobalBatch) / (m.latency_us * 1e-6);
    out.push_back({"training-s8", fmt::format("{} seq {} throughput", r.model, r.seq), "seq/s",
                   r.seq_per_s, seq_per_s, 0.15,
                   fmt::format("VALIDATION.md s8 (Trn1, {})", r.framework),
                   fmt::format("16 x trn1.32xlarge, TP={} DP={}: one replica's step of {} "
                               "micro-batches ({:.0f} ms), no DP gradient reduction",
                               kTp, kDp, o.micro_batches, m.latency_us / 1e3),
                   ""});
  }
  return out;
}

}  // namespace trnsim::validate
