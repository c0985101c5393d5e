// VALIDATION.md s9: serving latency (time to first token, time per output token) of Llama
// models on Trn1 (Transformers NeuronX, trn1.32xlarge, TP=32, Neuron 2.18) and Trn2 (vLLM on
// optimum-neuron, one chip, TP=4 with LNC=2, Neuron 2.26). trnsim: planner::serve with the
// graphs each row's stack compiled (the table's compiled sequence; on Trn2 a batch of 32 that
// every decode step runs although one request is live, prompts prefilled one at a time), the
// prefill at the prompt's power-of-two bucket and decode steps at their power-of-two KV bucket
// (NxD Inference's automatic bucketing; assumed for both stacks), every kernel simulated, the
// all-reduces on the system's fabric under the neuron-2.28 runtime's device-side handshakes.
// Nothing is fitted on these figures: they check the model layer. The Trn2 row's measurement
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
};

constexpr Row kRows[] = {
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 128, 256, 1, 1, 53.91, 25.18,
     "VALIDATION.md s9 (Trn1, TNx, Neuron 2.18, P50)"},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 1, 1024, 1024, 2048, 1, 1, 232.48, 26.04,
     "VALIDATION.md s9 (Trn1, TNx, Neuron 2.18, P50)"},
    {"llama-2-70b", "trn1.32xlarge", "trn1", 32, 1, 4, 128, 128, 256, 4, 4, 156.85, 26.72,
     "VALIDATION.md s9 (Trn1, TNx, Neuron 2.18, P50)"},
    {"llama-2-7b", "trn1.32xlarge", "trn1", 32, 1, 1, 128, 8064, 8192, 1, 1, 13.32, 6.70,
     "VALIDATION.md s9 (Trn1, TNx, Neuron 2.18, P50)"},
    {"llama-3.1-8b", "trn2.3xlarge", "trn2", 4, 2, 1, 1500, 250, 4096, 32, 1, 197.2, 22.14,
     "VALIDATION.md s9 (Trn2, vLLM optimum-neuron, Neuron 2.26; ITL as TPOT)"},
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
    const planner::ServeResult s = planner::serve(graph::load_model_config(r.model), o);
    const std::string where = *r.system ? r.system : fmt::format("one {} chip", r.chip);
    const std::string name = fmt::format("{} b{} {}/{}", r.model, r.batch, r.input, r.output);
    const std::string note = fmt::format(
        "{}, TP={}{}, compiled batch {} (prefill {}), seq {}, prefill bucket {}, "
        "KV buckets pow2, runtime neuron-2.28",
        where, r.tp, r.lnc > 1 ? fmt::format(" LNC={}", r.lnc) : "", r.compiled_batch, r.ctx_batch,
        r.compiled_seq, s.bucket);
    out.push_back(
        {"serving-s9", name + " TTFT", "ms", r.ttft_ms, s.ttft_ms, 0.15, r.source, note, ""});
    out.push_back(
        {"serving-s9", name + " TPOT", "ms", r.tpot_ms, s.tpot_ms, 0.15, r.source, note, ""});
  }
  return out;
}

}  // namespace trnsim::validate
