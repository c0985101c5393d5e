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
#include <fmt/format.h>

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
  const char* runtime;     // spec/runtime: the collective runtime of the row's Neuron release
  const char* tpot_fitted;  // the runtime key the row's TPOT sets; "" = checked
};

constexpr const char* kTnx = "VALIDATION.md s9 (Trn1, TNx, Neuron 2.18, P50)";

constexpr Row kRows[] = {
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 128, 256, 1, 1, 53.91, 25.18,
     kTnx, "neuron-2.18", "sync.peer_us (neuron-2.18)"},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 1024, 1024, 2048, 1, 1, 232.48, 26.04,
     kTnx, "neuron-2.18", ""},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 4, 128, 128, 256, 4, 4, 156.85, 26.72,
     kTnx, "neuron-2.18", ""},
    {"llama-2-7b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 8064, 8192, 1, 1, 13.32, 6.70,
     kTnx, "neuron-2.18", ""},
    {"llama-3.1-8b", "trn2.3xlarge", "trn2", 4, 2, 1, 1500, 250, 4096, 32, 1, 197.2, 22.14,
     "VALIDATION.md s9 (Trn2, vLLM optimum-neuron, Neuron 2.26; ITL as TPOT)", "neuron-2.28", ""},
};

}  // namespace

std::vector<Record> serving_records() {
  std::vector<Record> out;
  for (const Row& r : kRows) {
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
    const planner::ServeResult s = planner::serve(graph::load_model_config(r.model), o);
    const std::string where = *r.system ? r.system : fmt::format("one {} chip", r.chip);
    const std::string name = fmt::format("{} b{} {}/{}", r.model, r.batch, r.input, r.output);
    const std::string note = fmt::format(
        "{}, TP={}{}, compiled batch {} (prefill {}), seq {}, prefill bucket {}, "
        "KV buckets pow2, runtime {}",
        where, r.tp, r.lnc > 1 ? fmt::format(" LNC={}", r.lnc) : "", r.compiled_batch, r.ctx_batch,
        r.compiled_seq, s.bucket, r.runtime);
    out.push_back(
        {"serving-s9", name + " TTFT", "ms", r.ttft_ms, s.ttft_ms, 0.15, r.source, note, ""});
    out.push_back(
        {"serving-s9", name + " TPOT", "ms", r.tpot_ms, s.tpot_ms, 0.15, r.source, note, r.tpot_fitted});
  }
  return out;
}

}  // namespace trnsim::validate
