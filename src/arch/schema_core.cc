// Schema rows of one NeuronCore (`core.*`, core_spec.h). Sources for each value are in the data
// files; this file says what each key means and in which unit.
#include <fmt/format.h>

#include "arch/schema_bind.h"

namespace trnsim::arch {

namespace {

using bind::Scope;

// Which dtype classes an engine's datapath distinguishes (HARDWARE.md s2 table).
struct Classes {
  bool bf16 = false, fp8 = false, mx = false, sparse = false, out = false;
};

constexpr std::string_view kEpc = "elements/cycle";

template <class S>
void add_engine(S e, std::string_view engine, Classes c) {
  e.add(TRNSIM_KEY(clock_ghz), "GHz", fmt::format("{} clock", engine)).range(0.05, 10);
  auto epc = e.scope(TRNSIM_KEY(elements_per_cycle));
  const std::string per = fmt::format("{} input elements per {} cycle", engine, engine);
  if (c.bf16) epc.add(TRNSIM_KEY(bf16), std::string(kEpc), per + " for BF16/FP16").range(1, 65536);
  if (c.fp8) epc.add(TRNSIM_KEY(fp8), std::string(kEpc), per + " for FP8 (not MX)").range(1, 65536);
  if (c.mx) epc.add(TRNSIM_KEY(mx), std::string(kEpc), per + " for MXFP8/MXFP4").range(1, 65536);
  if (c.sparse) {
    epc.add(TRNSIM_KEY(sparse), std::string(kEpc), per + " for structured-sparse inputs")
        .range(1, 65536);
  }
  epc.add(TRNSIM_KEY(other), std::string(kEpc), per + " for every dtype without its own rate")
      .range(1, 65536);
  if (c.out) {
    epc.add(TRNSIM_KEY(out), std::string(kEpc), fmt::format("{} output elements per cycle", engine))
        .range(1, 65536);
  }
}

template <class S>
void add_tensor(S t) {
  add_engine(t, "TensorE", {.bf16 = false, .fp8 = true, .mx = true, .sparse = true, .out = true});
  t.add(TRNSIM_KEY(pe_rows), "PEs", "rows of the systolic PE array (the contraction K)")
      .range(1, 4096);
  t.add(TRNSIM_KEY(pe_cols), "PEs", "columns of the PE array (output partitions M)").range(1, 4096);

  auto rate = t.scope(TRNSIM_KEY(matmul_rate));
  const std::string r = "MACs per PE per cycle relative to BF16 for ";
  rate.add(TRNSIM_KEY(bf16), "x BF16", r + "BF16 inputs (1 by definition)").range(1, 1);
  rate.add(TRNSIM_KEY(fp16), "x BF16", r + "FP16 inputs").range(0.01, 64);
  rate.add(TRNSIM_KEY(tf32), "x BF16", r + "TF32 inputs").range(0.01, 64);
  rate.add(TRNSIM_KEY(fp32), "x BF16", r + "FP32 inputs (1/4: four passes)").range(0.01, 64);
  rate.add(TRNSIM_KEY(fp8), "x BF16", r + "dense FP8/cFP8 (NC-v3: with perf_mode=double_row)")
      .range(0.01, 64);
  rate.add(TRNSIM_KEY(mxfp8), "x BF16", r + "MXFP8 (nc_matmul_mx)").range(0.01, 64);
  rate.add(TRNSIM_KEY(mxfp4), "x BF16", r + "MXFP4 (nc_matmul_mx)").range(0.01, 64);
  rate.add(TRNSIM_KEY(sparse), "x BF16", r + "structured sparsity, counted as dense FLOPS")
      .range(0.01, 64);

  auto pub = t.scope(TRNSIM_KEY(published_tflops));
  const std::string p = "per-core TensorE peak as the vendor publishes it, ";
  pub.add(TRNSIM_KEY(bf16), "TFLOPS", p + "BF16/FP16/TF32");
  pub.add(TRNSIM_KEY(fp8), "TFLOPS", p + "FP8/cFP8 (not MX)");
  pub.add(TRNSIM_KEY(mxfp8), "TFLOPS", p + "MXFP8/MXFP4");
  pub.add(TRNSIM_KEY(fp32), "TFLOPS", p + "FP32");
  pub.add(TRNSIM_KEY(sparse), "TFLOPS", p + "structured sparse");

  t.add(TRNSIM_KEY(row_tile_sizes), "PE rows", "PE-row tile sizes a matmul may occupy (row tiling)")
      .range(1, 4096);
  t.add(TRNSIM_KEY(col_tile_sizes), "PE cols", "PE-column tile sizes a matmul may occupy")
      .range(1, 4096);

  auto lim = t.scope(TRNSIM_KEY(limits));
  lim.add(TRNSIM_KEY(k_max), "elements", "max contraction K per matmul (partitions)")
      .range(1, 4096);
  lim.add(TRNSIM_KEY(m_max), "elements", "max stationary free size M").range(1, 4096);
  lim.add(TRNSIM_KEY(n_max_fp32_psum), "elements", "max moving free size N, fp32 PSUM destination")
      .range(1, 65536);
  lim.add(TRNSIM_KEY(n_max_bf16_psum), "elements", "max moving free size N, bf16 PSUM destination")
      .range(1, 65536);
  lim.add(TRNSIM_KEY(fp8_double_row_k_max), "elements", "max K of a double_row FP8 matmul")
      .range(1, 4096);
  lim.add(TRNSIM_KEY(mx_k_max), "elements", "max K of an MX matmul (partitions x 4 packed)")
      .range(1, 4096);
  lim.add(TRNSIM_KEY(mx_n_max), "elements", "max moving free size N of an MX matmul")
      .range(1, 65536);
}

template <class S>
void add_memories(S core) {
  auto sbuf = core.scope(TRNSIM_KEY(sbuf));
  sbuf.add(TRNSIM_KEY(partitions), "", "SBUF partitions (rows); one per engine lane")
      .range(1, 1024);
  sbuf.add(TRNSIM_KEY(bytes_per_partition), "bytes", "SBUF capacity of one partition")
      .range(1, 1 << 24);
  sbuf.add(TRNSIM_KEY(usable_bytes_per_partition), "bytes",
           "SBUF bytes per partition the compiler allocates from (KLR tile-size constants)")
      .range(1, 1 << 24);

  auto psum = core.scope(TRNSIM_KEY(psum));
  psum.add(TRNSIM_KEY(partitions), "", "PSUM partitions").range(1, 1024);
  psum.add(TRNSIM_KEY(banks), "", "PSUM banks per partition; one matmul accumulation group each")
      .range(1, 64);
  psum.add(TRNSIM_KEY(bank_bytes), "bytes", "bytes of one PSUM bank in one partition")
      .range(1, 1 << 20);
  psum.add(TRNSIM_KEY(dtypes), "", "dtypes a matmul may write into PSUM").one_of({"fp32", "bf16"});
}

template <class S>
void add_dma(S dma) {
  dma.add(TRNSIM_KEY(engines), "", "DMA engines serving one NeuronCore").range(1, 1024);
  dma.add(TRNSIM_KEY(queues_per_engine), "", "queues per DMA engine (in order within a queue)")
      .range(1, 1024);
  dma.add(TRNSIM_KEY(engine_bandwidth_theoretical_gbps), "GB/s",
          "theoretical bandwidth of one engine");
  dma.add(TRNSIM_KEY(engine_bandwidth_practical_gbps), "GB/s",
          "practical peak bandwidth of one engine (published B/ns)");
  dma.add(TRNSIM_KEY(fixed_overhead_ns), "ns",
          "fixed cost of a DMA from semaphore to data movement");
  dma.add(TRNSIM_KEY(core_bandwidth_gbps), "GB/s",
          "the core's DMA engines together: a cap on their summed rate while they gather rows "
          "from HBM (absent: no cap)");
  dma.add(TRNSIM_KEY(core_block_bandwidth_gbps), "GB/s",
          "the same cap while their HBM side is one contiguous block (absent: "
          "core_bandwidth_gbps)");
  dma.add(TRNSIM_KEY(core_write_bandwidth_gbps), "GB/s",
          "the same cap while they write HBM, whatever the pattern (absent: the read caps "
          "only)");
  dma.add(TRNSIM_KEY(descriptor_overhead_ns), "ns",
          "time an engine spends on each descriptor (one contiguous range) besides its bytes "
          "(absent: none)");
  dma.add(TRNSIM_KEY(hwdge_per_core), "", "hardware descriptor-generation (HWDGE) blocks per core")
      .range(0, 64);
  dma.add(TRNSIM_KEY(dge_instruction_ns), "ns", "time of one hardware-DGE DMA instruction");
  dma.add(TRNSIM_KEY(qos_classes), "", "DMA priority classes; 0 = round-robin across queues")
      .range(0, 16);
  dma.add(TRNSIM_KEY(write_barrier), "",
          "DMA write ordering between transfers of one ring (HW-T2 table; meaning: "
          "docs/race_check.md)")
      .one_of({"write-after-write", "strong-order-write"});
  dma.add(TRNSIM_KEY(transpose), "", "DMA can transpose 2-byte dtypes during a copy");
}

template <class S>
void add_cost(S cost) {
  const std::string c = " (engine cycles; HARDWARE.md s8.1)";
  cost.add(TRNSIM_KEY(min_ii_cycles), "cycles", "minimum initiation interval MIN_II" + c)
      .range(0, 100000);
  cost.add(TRNSIM_KEY(mm_init_latency_cycles), "cycles",
           "TensorE MM turnaround, MM_INIT_LATENCY" + c)
      .range(0, 100000);
  cost.add(TRNSIM_KEY(gpsimd_start_cycles), "cycles", "GpSimd start cost GPSIMD_START" + c)
      .range(0, 100000);
  cost.add(TRNSIM_KEY(sbuf_access_setup_cycles), "cycles",
           "static setup of one SBUF/PSUM access" + c)
      .range(0, 100000);
  cost.add(TRNSIM_KEY(static_overhead_cycles), "cycles",
           "static overhead of a small or dependent instruction" + c)
      .range(0, 100000);
  cost.add(TRNSIM_KEY(act_dependent_ii_cycles), "cycles",
           "measured ScalarE II of RAW-dependent 1-element activations" + c)
      .range(0, 100000);
}

template <class S>
void add_flags(S core) {
  auto ports = core.scope(TRNSIM_KEY(ports));
  ports.add(TRNSIM_KEY(vector_gpsimd_sbuf_conflict), "",
            "VectorE and GpSimdE cannot access SBUF at the same time");
  ports.add(TRNSIM_KEY(vector_scalar_psum_conflict), "",
            "VectorE and ScalarE cannot access PSUM at the same time");

  auto f = core.scope(TRNSIM_KEY(features));
  f.add(TRNSIM_KEY(double_row_fp8), "", "FP8 matmul with K = 256 at the BF16 instruction time");
  f.add(TRNSIM_KEY(mx_matmul), "", "MXFP8/MXFP4 matmul with fused E8M0 dequantization");
  f.add(TRNSIM_KEY(bf16_psum), "", "matmul may write BF16 into PSUM");
  f.add(TRNSIM_KEY(near_memory_accumulation), "",
        "DMA read-add-write into SBUF at full copy throughput");
  f.add(TRNSIM_KEY(fast_exponential), "", "VectorE exponential at 4x ScalarE exp throughput");
  f.add(TRNSIM_KEY(quantize_mx), "", "VectorE quantize_mx: BF16/FP16 to MXFP8 plus scales");
  f.add(TRNSIM_KEY(background_transpose), "", "TensorE transpose in parallel with another matmul");
  f.add(TRNSIM_KEY(structured_sparsity), "", "TensorE structured-sparse matmul");
  f.add(TRNSIM_KEY(bit_exact_transpose), "", "TensorE is_transpose mode copies bits exactly");
  f.add(TRNSIM_KEY(indirect_addressing), "", "free-dim gather/scatter through an offset tensor");
  f.add(TRNSIM_KEY(core_to_core), "",
        "core_barrier and sendrecv between the physical cores of a logical core");
  f.add(TRNSIM_KEY(range_select), "",
        "VectorE range_select: a free-index range select with a fused max (NC-v3 and newer)");
  f.add(TRNSIM_KEY(activate2), "",
        "ScalarE activate2: an ALU stage (two tensor-scalar ops) before the function (NC-v4)");
  f.add(TRNSIM_KEY(nonzero_with_count), "",
        "GpSimd nonzero_with_count: nonzero positions and their count (NC-v3 and newer)");
  f.add(TRNSIM_KEY(rand2), "", "VectorE rand2: uniform draws in [min, max) (NC-v4)");
}

}  // namespace

void add_core_keys(Schema& schema) {
  auto core = bind::root(schema).scope(TRNSIM_KEY(core));
  core.add(TRNSIM_KEY(name), "", "NeuronCore generation name (NeuronCore-v2, -v3, -v4)");
  core.add(TRNSIM_KEY(version), "", "NeuronCore version: 2 (Trn1), 3 (Trn2), 4 (Trn3)")
      .range(1, 99);
  add_tensor(core.scope(TRNSIM_KEY(tensor)));
  add_engine(core.scope(TRNSIM_KEY(vector)), "VectorE", {.bf16 = true, .fp8 = true});
  add_engine(core.scope(TRNSIM_KEY(scalar)), "ScalarE", {.bf16 = true, .fp8 = true});
  add_engine(core.scope(TRNSIM_KEY(gpsimd)), "GpSimdE", {});
  core.scope(TRNSIM_KEY(sync))
      .add(TRNSIM_KEY(clock_ghz), "GHz", "Sync engine (SP) sequencer clock; no datapath")
      .range(0.05, 10);
  add_memories(core);
  add_dma(core.scope(TRNSIM_KEY(dma)));
  add_cost(core.scope(TRNSIM_KEY(cost)));
  core.scope(TRNSIM_KEY(launch))
      .add(TRNSIM_KEY(overhead_ns), "ns",
           "start-up and tear-down of one kernel launch (NEFF execution) on the device, added "
           "to a launch's latency (absent: 0)")
      .range(0, 1e9);
  add_flags(core);
}

}  // namespace trnsim::arch
