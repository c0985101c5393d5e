#include <string>
#include <utility>

#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

std::vector<Target>& added() {
  static std::vector<Target> list;
  return list;
}

std::vector<Target> builtin() {
  return {
      {"matmul-tutorial",
       "NKI matmul tutorial, four versions, 4096x8192x8192 bf16 on one NeuronCore-v2 (s2)",
       matmul_tutorial_records},
      {"dma", "one HBM->SBUF DMA of a [4, 4096] bf16 tensor on Trn2 (s3)", single_dma_records},
      {"allreduce-2rank", "2-rank fp32 all-reduce, cores of a Trn1 (s4)", allreduce_2rank_records},
      {"vendor-constants",
       "engine constants the vendor states: dependent-instruction interval, matmul turnaround, "
       "static overhead (s5)",
       vendor_constant_records},
      {"collectives-s7",
       "nccom-test examples: 2023 and Neuron 2.28 runtimes, all-gather, all-reduce, permute, "
       "all-to-all-v on Trn1 and Trn2 (s7)",
       collective_s7_records},
      {"nccom-page",
       "nccom-test page sweeps not in VALIDATION.md: 32-rank all-gather on one trn1.32xlarge, "
       "64-rank all-reduce on two",
       collective_page_records},
      {"serving-s9",
       "serving latency, TTFT and TPOT: Llama-2 7B / 70B on a trn1.32xlarge (TP=32), Llama-3.1-8B "
       "on one Trn2 (TP=4, LNC=2) (s9)",
       serving_records},
      {"serving-trn1-table",
       "the rest of s9's Trn1 source table (not in VALIDATION.md): Llama-3 8B / 70B, Llama-2 "
       "13B / 70B, Mistral-7B, CodeLlama-13B on a trn1.32xlarge (TP=32, TNx, Neuron 2.18)",
       serving_table_records},
      {"training-s8",
       "training throughput: GPT-3 6.7B and Llama-2 7B / 13B on 16 / 32 trn1.32xlarge under "
       "their TP / PP / DP plans (s8)",
       training_records},
      {"training-trn1-table",
       "Neuron's Trn1 training tables (not in VALIDATION.md): Llama-3.1 8B (TP=32 DP=32) and "
       "70B (TP=32 PP=8 DP=4) at seq 8192 on 32 trn1.32xlarge; BERT-Large pretraining, DP=32",
       training_table_records},
      {"encoder-trn1-table",
       "BERT-Large inference latency at batch 1 and 4, seq 128, on one Trn1 core, from Neuron's "
       "Trn1 encoder tables (not in VALIDATION.md)",
       encoder_table_records},
  };
}

}  // namespace

std::vector<Target> targets() {
  std::vector<Target> all = builtin();
  all.insert(all.end(), added().begin(), added().end());
  return all;
}

void add_target(Target t) {
  for (Target& a : added())
    if (a.name == t.name) {
      a = std::move(t);
      return;
    }
  added().push_back(std::move(t));
}

void clear_added_targets() { added().clear(); }

}  // namespace trnsim::validate
