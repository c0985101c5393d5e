// One NeuronCore, as typed data. Member names ARE the dotted keys of spec/chips/*.toml under
// `core.` (schema_core.cc binds each one once, with its unit, range and help text), so a key
// seen in a data file, in `trnsim spec --keys` and in C++ reads the same.
// std::optional marks keys a generation may leave out (a rate that does not exist on it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trnsim::arch {

// Elements through an engine's datapath per engine cycle, by input dtype class
// (HARDWARE.md s2 table). A class left unset runs at `other`.
struct ElementsPerCycle {
  std::optional<int> bf16;    // BF16/FP16 inputs
  std::optional<int> fp8;     // FP8 inputs (not MX)
  std::optional<int> mx;      // MXFP8/MXFP4 inputs (TensorE)
  std::optional<int> sparse;  // structured-sparse inputs (TensorE)
  int other = 0;              // every other dtype
  std::optional<int> out;     // output elements (TensorE, to PSUM)
};

struct EngineSpec {
  double clock_ghz = 0;
  ElementsPerCycle elements_per_cycle;
};

// Multiply-accumulates per PE per cycle, relative to BF16 (= 1). Peak matmul FLOPS per core =
// clock x pe_rows x pe_cols x 2 x rate (HARDWARE.md s1).
struct MatmulRate {
  double bf16 = 1, fp16 = 1, tf32 = 1, fp32 = 0.25;
  std::optional<double> fp8;    // dense FP8, not MX (NC-v3: double_row)
  std::optional<double> mxfp8;  // MX matmul, NC-v4
  std::optional<double> mxfp4;
  std::optional<double> sparse;  // structured sparsity, dense-equivalent FLOPS
};

// Per-core TensorE figures as the vendor publishes them (rounded), kept to compare with the
// derivation from clock and array size.
struct PublishedCoreTflops {
  std::optional<double> bf16, fp8, mxfp8, fp32, sparse;
};

struct MatmulLimits {
  int k_max = 0;            // contraction (partition dim of both inputs)
  int m_max = 0;            // stationary free dim = output partitions
  int n_max_fp32_psum = 0;  // moving free dim with an fp32 PSUM destination
  std::optional<int> n_max_bf16_psum;
  std::optional<int> fp8_double_row_k_max;
  std::optional<int> mx_k_max;
  std::optional<int> mx_n_max;
};

struct TensorSpec : EngineSpec {
  int pe_rows = 0, pe_cols = 0;
  MatmulRate matmul_rate;
  PublishedCoreTflops published_tflops;
  std::vector<int> row_tile_sizes, col_tile_sizes;  // PE rows/cols a tile may use
  MatmulLimits limits;
};

struct SyncSpec {
  double clock_ghz = 0;  // a sequencer without a datapath (SP)
};

struct SbufSpec {
  int partitions = 0;
  int64_t bytes_per_partition = 0;
  int64_t usable_bytes_per_partition = 0;  // what the compiler allocates from (KLR)
};

struct PsumSpec {
  int partitions = 0;
  int banks = 0;
  int64_t bank_bytes = 0;           // per partition
  std::vector<std::string> dtypes;  // what a matmul may write
};

struct DmaSpec {
  int engines = 0;
  int queues_per_engine = 0;
  double engine_bandwidth_theoretical_gbps = 0;
  double engine_bandwidth_practical_gbps = 0;
  double fixed_overhead_ns = 0;
  // All DMA engines of the core together (absent: engines x practical per-engine rate).
  std::optional<double> core_bandwidth_gbps;
  // The same cap for transfers whose HBM side is one contiguous block (absent: as above).
  std::optional<double> core_block_bandwidth_gbps;
  // The same cap for transfers that write HBM, whatever their pattern (absent: no separate cap).
  std::optional<double> core_write_bandwidth_gbps;
  // Time an engine spends on each descriptor (one contiguous range) besides streaming its bytes.
  std::optional<double> descriptor_overhead_ns;  // absent: none
  int hwdge_per_core = 0;
  std::optional<double> dge_instruction_ns;
  int qos_classes = 0;  // 0 = round-robin across queues
  std::string write_barrier;
  bool transpose = false;
};

// Published cost-model constants in engine cycles (HARDWARE.md s8.1); timing layers read these
// instead of literals.
struct CostSpec {
  int min_ii_cycles = 0;
  int mm_init_latency_cycles = 0;
  int gpsimd_start_cycles = 0;
  int sbuf_access_setup_cycles = 0;
  int static_overhead_cycles = 0;
  std::optional<int> act_dependent_ii_cycles;
};

struct PortSpec {
  bool vector_gpsimd_sbuf_conflict = false;
  bool vector_scalar_psum_conflict = false;
};

struct FeatureSpec {
  bool double_row_fp8 = false;
  bool mx_matmul = false;
  bool bf16_psum = false;
  bool near_memory_accumulation = false;
  bool fast_exponential = false;
  bool quantize_mx = false;
  bool background_transpose = false;
  bool structured_sparsity = false;
  bool bit_exact_transpose = false;
  bool indirect_addressing = false;
  bool core_to_core = false;        // core_barrier, sendrecv
  bool range_select = false;        // NC-v3 VectorE range_select
  bool activate2 = false;           // NC-v4 ScalarE activate2
  bool nonzero_with_count = false;  // NC-v3 GpSimd nonzero_with_count
  bool rand2 = false;               // NC-v4 VectorE rand2
};

// A kernel launch (one NEFF execution) around the core's own run: the device's start-up and
// tear-down, which a profile's device time and a benchmark's latency include.
struct LaunchSpec {
  std::optional<double> overhead_ns;  // absent: not modelled (0)
};

struct CoreSpec {
  std::string name;
  int version = 0;
  TensorSpec tensor;
  EngineSpec vector, scalar, gpsimd;
  SyncSpec sync;
  SbufSpec sbuf;
  PsumSpec psum;
  DmaSpec dma;
  CostSpec cost;
  LaunchSpec launch;
  PortSpec ports;
  FeatureSpec features;
};

}  // namespace trnsim::arch
