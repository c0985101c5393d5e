// encoder-trn1-table: BERT-Large inference from Neuron's published Trn1 encoder tables
// (aws-neuron-sdk about-neuron/benchmarks/trn1/latency_data_encoder.csv and
// throughput_data_encoder.csv, Neuron 2.27, PyTorch 2.9 torch-neuronx, trn1.2xlarge, data
// parallel: each NeuronCore runs its own copy; FP32 model, matmuls auto-cast to BF16;
// sequence 128), not in VALIDATION.md: the P50 latency of one forward at batch 1 and 4.
// trnsim: the model compiler's forward on one Trn1 core (graph/model_run.h), nothing fitted.
// The measured latency is a torch call's: its host-side work is in it, not in trnsim's.
#include <fmt/format.h>

#include "graph/model_config.h"
#include "graph/model_run.h"
#include "validate/target_list.h"

namespace trnsim::validate {

std::vector<Record> encoder_table_records() {
  struct Row {
    int64_t batch;
    double ms;
    const char* table;
  };
  constexpr Row kRows[] = {{1, 2.66885757, "latency_data_encoder.csv"},
                           {4, 7.24101067, "throughput_data_encoder.csv"}};
  const graph::ModelConfig m = graph::load_model_config("bert-large");
  std::vector<Record> out;
  for (const Row& r : kRows) {
    graph::ModelRunOptions o;
    o.chip = "trn1";
    o.tp = 1;
    o.batch = r.batch;
    o.seq = 128;
    const graph::ModelResult res = graph::run_model(m, o);
    out.push_back({"encoder-trn1-table", fmt::format("bert-large b{} seq 128 latency", r.batch),
                   "ms", r.ms, res.latency_us / 1e3, 0.15,
                   fmt::format("Neuron trn1 {} (torch-neuronx, Neuron 2.27, P50; not in "
                               "VALIDATION.md)",
                               r.table),
                   fmt::format("one Trn1 core, batch {} x 128 tokens, bf16 matmuls, {} kernels",
                               r.batch, res.kernels),
                   ""});
  }
  return out;
}

}  // namespace trnsim::validate
