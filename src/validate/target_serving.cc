// VALIDATION.md s9: serving latency (time to first token, time per output token) of Llama
// models on Trn1 (Transformers NeuronX, trn1.32xlarge, TP=32, Neuron 2.18) and Trn2 (vLLM on
// optimum-neuron, one chip, TP=4 with LNC=2, Neuron 2.26). trnsim: planner::serve with the
// graphs each row's stack compiled (the table's compiled sequence; on Trn2 a batch of 32 that
// every decode step runs although one request is live, prompts prefilled one at a time), the
// prefill at the prompt's power-of-two bucket and decode steps at their power-of-two KV bucket
// (NxD Inference's automatic bucketing; assumed for both stacks), every kernel simulated, the
// all-reduces on the system's fabric under the device-side handshakes of each row's runtime
// version (spec/runtime: neuron-2.18 for the Trn1 rows, whose per-peer handshake is fitted on
// the 70B batch-1 128/128 TPOT; neuron-2.28, the nearest to 2.26, for the Trn2 row). The other
// figures check the model layer. The Trn2 row's measurement
// also holds vLLM's scheduling, sampling and host transfers per token, which trnsim does not
// model.
//
// serving-trn1-table: the other rows of the table VALIDATION.md s9 takes its Trn1 figures from
// (aws-neuron-sdk about-neuron/benchmarks/trn1/latency_data_decoder.csv, Neuron 2.18, TNx,
// trn1.32xlarge, TP=32, batch 1, P50), under the same settings and runtime: Llama-3 8B (int8
// weights, as the table stores them), Llama-3 70B, Llama-2 70B at four more sequence lengths
// Mistral-7B-Instruct-v0.2, Llama-2 13B and CodeLlama-13B (their 40 heads padded to 64 over the
// 32 ranks, as Neuron pads them). All checked.
#include <fmt/format.h>

#include <span>
#include <string_view>

#include "graph/model_config.h"
#include "planner/serve.h"
#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

struct Row {
  const char* model;
  const char* system;  // "" : one chip
  const char* chip;
  int tp, lnc;
  int64_t batch, input, output;
  int64_t compiled_seq, compiled_batch, ctx_batch;
  double ttft_ms, tpot_ms;
  const char* source;
  const char* runtime;           // spec/runtime: the collective runtime of the row's Neuron release
  const char* tpot_fitted;       // the runtime key the row's TPOT sets; "" = checked
  const char* weights = "bf16";  // weight storage (ServeOptions::weights)
};

constexpr const char* kTnx = "VALIDATION.md s9 (Trn1, TNx, Neuron 2.18, P50)";

constexpr Row kRows[] = {
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 128, 256, 1, 1, 53.91, 25.18, kTnx,
     "neuron-2.18", "sync.peer_us (neuron-2.18)"},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 1024, 1024, 2048, 1, 1, 232.48, 26.04, kTnx,
     "neuron-2.18", ""},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 4, 128, 128, 256, 4, 4, 156.85, 26.72, kTnx,
     "neuron-2.18", ""},
    {"llama-2-7b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 8064, 8192, 1, 1, 13.32, 6.70, kTnx,
     "neuron-2.18", ""},
    {"llama-3.1-8b", "trn2.3xlarge", "trn2", 4, 2, 1, 1500, 250, 4096, 32, 1, 197.2, 22.14,
     "VALIDATION.md s9 (Trn2, vLLM optimum-neuron, Neuron 2.26; ITL as TPOT)", "neuron-2.28", ""},
};

constexpr const char* kTable =
    "Neuron trn1 latency_data_decoder.csv (TNx, Neuron 2.18, P50; not in VALIDATION.md)";

constexpr Row kTableRows[] = {
    {"llama-3-8b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 8064, 8192, 1, 1, 17.09, 7.03, kTable,
     "neuron-2.18", "", "int8"},
    {"llama-3-8b", "trn1.32xlarge", "trn1", 32, 1, 1, 4096, 4096, 8192, 1, 1, 153.02, 7.04, kTable,
     "neuron-2.18", "", "int8"},
    {"llama-3-8b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 3968, 4096, 1, 1, 14.75, 5.86, kTable,
     "neuron-2.18", "", "int8"},
    {"llama-3-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 2048, 2048, 4096, 1, 1, 547.0, 26.2, kTable,
     "neuron-2.18", ""},
    {"llama-3-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 1024, 1152, 1, 1, 53.2, 24.48, kTable,
     "neuron-2.18", ""},
    {"llama-3-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 128, 256, 1, 1, 52.53, 26.48, kTable,
     "neuron-2.18", ""},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 256, 256, 512, 1, 1, 81.88, 25.27, kTable,
     "neuron-2.18", ""},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 1024, 1152, 1, 1, 57.75, 25.45, kTable,
     "neuron-2.18", ""},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 1024, 2048, 3072, 1, 1, 236.78, 26.62,
     kTable, "neuron-2.18", ""},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 2048, 2048, 4096, 1, 1, 690.96, 26.85,
     kTable, "neuron-2.18", ""},
    {"mistral-7b-instruct-v0.2", "trn1.32xlarge", "trn1", 32, 1, 1, 8192, 8192, 16384, 1, 1,
     1322.87, 9.89, kTable, "neuron-2.18", ""},
    // 40 heads over 32 ranks: padded to 64 (graph::BuildOptions::pad_heads), two a rank.
    {"llama-2-13b", "trn1.32xlarge", "trn1", 32, 1, 1, 4096, 4096, 8192, 1, 1, 864.14, 9.84, kTable,
     "neuron-2.18", ""},
    {"llama-2-13b", "trn1.32xlarge", "trn1", 32, 1, 1, 8192, 8192, 16384, 1, 1, 2367.93, 13.41,
     kTable, "neuron-2.18", ""},
    {"codellama-13b", "trn1.32xlarge", "trn1", 32, 1, 1, 4096, 4096, 8192, 1, 1, 868.64, 9.86,
     kTable, "neuron-2.18", ""},
    {"codellama-13b", "trn1.32xlarge", "trn1", 32, 1, 1, 8192, 8192, 16384, 1, 1, 2372.93, 13.40,
     kTable, "neuron-2.18", ""},
};

std::vector<Record> row_records(const std::string& target, std::span<const Row> rows) {
  std::vector<Record> out;
  for (const Row& r : rows) {
    planner::ServeOptions o;
    o.system = r.system;
    o.chip = r.chip;
    o.tp = r.tp;
    o.lnc = r.lnc;
    o.batch = r.batch;
    o.input_tokens = r.input;
    o.output_tokens = r.output;
    o.max_seq = r.compiled_seq;
    o.compiled_batch = r.compiled_batch;
    o.ctx_batch = r.ctx_batch;
    o.runtime = r.runtime;
    o.weights = r.weights;
    const planner::ServeResult s = planner::serve(graph::load_model_config(r.model), o);
    const std::string where = *r.system ? r.system : fmt::format("one {} chip", r.chip);
    const std::string name =
        fmt::format("{} b{} {}/{}{}", r.model, r.batch, r.input, r.output,
                    std::string_view(r.weights) != "bf16" ? fmt::format(" {}", r.weights) : "");
    const std::string note = fmt::format(
        "{}, TP={}{}, compiled batch {} (prefill {}), seq {}, prefill bucket {}, "
        "KV buckets pow2, weights {}, runtime {}",
        where, r.tp, r.lnc > 1 ? fmt::format(" LNC={}", r.lnc) : "", r.compiled_batch, r.ctx_batch,
        r.compiled_seq, s.bucket, r.weights, r.runtime);
    out.push_back({target, name + " TTFT", "ms", r.ttft_ms, s.ttft_ms, 0.15, r.source, note, ""});
    out.push_back(
        {target, name + " TPOT", "ms", r.tpot_ms, s.tpot_ms, 0.15, r.source, note, r.tpot_fitted});
  }
  return out;
}

}  // namespace

std::vector<Record> serving_records() { return row_records("serving-s9", kRows); }

std::vector<Record> serving_table_records() {
  return row_records("serving-trn1-table", kTableRows);
}

}  // namespace trnsim::validate
