// VALIDATION.md s8: training throughput of GPT-3 6.7B (Megatron-LM), Llama-2 7B and 13B (NxD)
// on 16 or 32 trn1.32xlarge servers under the measured plans (TP / PP / DP, micro-batch 1,
// global batch 1024). trnsim: planner::train (planner/train.h): each stage's forward, backward
// and optimizer from the model compiler's training step, every kernel simulated, the TP
// all-reduces on the server's fabric under the neuron-2.28 runtime; the 1F1B pipeline; the
// data-parallel gradient reduction (ZeRO-1: reduce-scatter and all-gather) of all replicas at
// once on the cluster's fabric. Recomputation as the published run scripts set it: selective
// for both NxD rows (aws-neuron/neuronx-distributed examples/training/llama:
// tp_zero1_llama2_7B_hf_pretrain.sh --selective_checkpoint_enabled, run_llama2_13B_tp_pp.sh
// --use_selective_checkpoint 1), none for Megatron-LM (aws-neuron-reference-for-megatron-lm
// pretrain_gpt3_6.7B_32layers_bf16_bs1024_slurm.sh has no --checkpoint-activations).
// Attention as each script computes it: the Llama-2 7B row flash attention
// (tp_zero1_llama_hf_pretrain.py's --use_flash_attention defaults to 1, NxD's NKI kernel); the
// 13B row eager attention (ops.h AttentionSpec::eager: run_llama_nxd.py's --use_flash_attention
// defaults to 0, so modeling_llama_nxd.py's CoreAttention runs: matmul, masked_fill, an fp32
// softmax cast to bf16, matmul); the Megatron-LM row eager too (megatron/model/transformer.py:
// baddbmm into [b * np, s, s] scores, scale_mask_softmax with its fusion off, bmm). Sequence
// parallelism as each sets it: on for the NxD rows (the 7B script passes
// --sequence_parallel_enabled; run_llama_nxd.py's --use_sequence_parallel defaults to 1), off
// for Megatron-LM (no --sequence-parallel). Nothing is
// fitted on these figures. Not modelled: overlap of the gradient reduction with the last
// micro-batch's backward.
//
// training-trn1-table: Neuron's published Trn1 decoder training table
// (aws-neuron-sdk about-neuron/benchmarks/trn1/training_data_decoder.csv, Neuron 2.24, NxD,
// 32 trn1.32xlarge, global batch 1024, micro-batch 1, seq 8192, BF16 with an FP32 optimizer),
// not in VALIDATION.md: Llama-3.1 8B at TP=32 DP=32 ZeRO-1 and 70B at TP=32 PP=8 DP=4, with
// what their run scripts set (aws-neuron/neuronx-distributed examples/training/llama:
// tp_zero1_llama3_8B_hf_pretrain.sh --sequence_parallel_enabled --selective_checkpoint_enabled
// --use_flash_attention 1; run_llama3_70B_tp_pp.sh --use_selective_checkpoint 1
// --use_flash_attention 1, sequence parallel by run_llama_nxd.py's default; both --kv_replicator
// 4, one kv head a rank). And the encoder table's AdamW row
// (about-neuron/benchmarks/trn1/training_data_encoder.csv, Neuron 2.27): BERT-Large phase-1
// pretraining (seq 128, BF16 autocast with stochastic rounding) data parallel over one
// trn1.32xlarge, its masked-LM head over every token (graph::BuildOptions::mlm_head); plain
// data parallelism (ZeRO-0) assumed, the tutorial's torch AdamW. All checked.
#include <fmt/format.h>

#include <span>

#include "graph/model_config.h"
#include "planner/train.h"
#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

constexpr int64_t kGlobalBatch = 1024;

struct Row {
  const char* model;
  const char* framework;
  int64_t servers;
  int tp, pp, dp;
  int64_t seq;
  planner::Recompute recompute;
  bool eager_attention, sequence_parallel;
  double seq_per_s;
  const char* source = "VALIDATION.md s8 (Trn1, {})";
  int64_t micro_batch = 1, global_batch = kGlobalBatch;
  int zero = 1;
};

constexpr Row kRows[] = {
    {"gpt3-6.7b", "Megatron-LM (XLA, BF16 + SR)", 16, 8, 1, 64, 2048, planner::Recompute::kNone,
     true, false, 140.0},
    {"llama-2-7b", "NxD (Neuron 2.21)", 16, 8, 1, 64, 4096, planner::Recompute::kSelective, false,
     true, 95.14},
    {"llama-2-13b", "NxD (Neuron 2.21)", 32, 8, 8, 16, 4096, planner::Recompute::kSelective, true,
     true, 80.33},
};

constexpr const char* kTable = "Neuron trn1 training_data_decoder.csv ({}, not in VALIDATION.md)";

constexpr Row kTableRows[] = {
    {"llama-3.1-8b", "NxD (Neuron 2.24)", 32, 32, 1, 32, 8192, planner::Recompute::kSelective,
     false, true, 47.95, kTable},
    {"llama-3.1-70b", "NxD (Neuron 2.24)", 32, 32, 8, 4, 8192, planner::Recompute::kSelective,
     false, true, 7.94, kTable},
    // The encoder table's AdamW row: BERT-Large phase-1 pretraining, data parallel over one
    // server's 32 cores, micro-batch 16, global batch 16,384 (32 micro-batches a step).
    {"bert-large", "torch-neuronx HF BERT pretraining (Neuron 2.27)", 1, 1, 1, 32, 128,
     planner::Recompute::kNone, false, false, 3836.47,
     "Neuron trn1 training_data_encoder.csv ({}, not in VALIDATION.md)", 16, 16384, 0},
    // Its LAMB row over 16 servers (DP=512, global batch 1,048,576: 128 micro-batches a step)
    // with AdamW's cost: LAMB's per-tensor trust ratios add two norms over the weights, a
    // millisecond against a step of ~19 s.
    {"bert-large", "torch-neuronx HF BERT pretraining (Neuron 2.27), LAMB as AdamW", 16, 1, 1, 512,
     128, planner::Recompute::kNone, false, false, 56923.65,
     "Neuron trn1 training_data_encoder.csv ({}, not in VALIDATION.md)", 16, 1048576, 0},
};

std::vector<Record> row_records(const std::string& target, std::span<const Row> rows) {
  std::vector<Record> out;
  for (const Row& r : rows) {
    planner::TrainOptions o;
    o.system = "trn1.32xlarge";
    o.servers = r.servers;
    o.tp = r.tp;
    o.pp = r.pp;
    o.dp = r.dp;
    o.seq = r.seq;
    o.global_batch = r.global_batch;
    o.micro_batch = r.micro_batch;
    o.zero = r.zero;
    o.recompute = r.recompute;
    o.eager_attention = r.eager_attention;
    o.sequence_parallel = r.sequence_parallel;
    const planner::TrainResult t = planner::train(graph::load_model_config(r.model), o);
    out.push_back(
        {target,
         fmt::format(
             "{} seq {} throughput{}", r.model, r.seq,
             r.servers > 1 && r.tp == 1 && r.pp == 1 ? fmt::format(" x{} servers", r.servers) : ""),
         "seq/s", r.seq_per_s, t.sequences_per_s, 0.15,
         fmt::format(fmt::runtime(r.source), r.framework),
         fmt::format("{} x trn1.32xlarge, TP={} PP={} DP={}, micro-batch {}, global "
                     "batch {}, ZeRO-{}, recompute {}, {} attention{}: step {:.2f} s "
                     "(compute {:.2f}, bubble {:.2f}, DP {:.2f})",
                     r.servers, r.tp, r.pp, r.dp, r.micro_batch, r.global_batch, r.zero,
                     planner::name(r.recompute), r.eager_attention ? "eager" : "flash",
                     r.sequence_parallel ? ", sequence parallel" : "", t.step_time_s, t.compute_s,
                     t.pp_bubble_s, t.dp_comm_s),
         ""});
  }
  return out;
}

}  // namespace

std::vector<Record> training_records() { return row_records("training-s8", kRows); }

std::vector<Record> training_table_records() {
  return row_records("training-trn1-table", kTableRows);
}

}  // namespace trnsim::validate
