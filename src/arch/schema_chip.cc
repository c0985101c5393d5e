// Schema rows of the file directives (`meta.*`), the chip (`chip.*`), its numerics policy
// (`numerics.*`) and the systems built from it (`server.*`, `ultraserver.*`, `ultracluster.*`).
#include <fmt/format.h>

#include "arch/schema_bind.h"

namespace trnsim::arch {

void add_meta_keys(Schema& schema) {
  auto meta = bind::root(schema).scope(TRNSIM_KEY(meta));
  // File directives, not facts about hardware: they carry no source and are not inherited.
  // Only generation files must give name, title and status (loader.cc checks); what-if files
  // default them.
  auto mk = [&](std::string_view rel, auto acc, std::string help) -> KeyInfo& {
    KeyInfo& k = meta.add(rel, acc, "", std::move(help));
    k.sourced = false;
    k.required = false;
    return k;
  };
  const std::string gen = " (required in generation files)";
  mk(TRNSIM_KEY(name), "name of the chip on the command line; default: the file name" + gen);
  mk(TRNSIM_KEY(title), "display title, e.g. \"Trainium2 (Trn2)\"" + gen);
  mk(TRNSIM_KEY(kind),
     "generation: every leaf must carry src/assume/derived; what-if (default): bare values are "
     "overrides")
      .one_of({"generation", "what-if"});
  mk(TRNSIM_KEY(status), "shipped, announced, projected or what-if" + gen)
      .one_of({"shipped", "announced", "projected", "what-if"});
  mk(TRNSIM_KEY(description), "one line about the chip");
  mk(TRNSIM_KEY(inherits),
     "chip this file starts from: a name in the spec dir, or a path (relative to this file)");
  mk(TRNSIM_KEY(drop), "inherited keys or tables this file removes before applying its own");
}

void add_chip_keys(Schema& schema) {
  auto root = bind::root(schema);
  auto chip = root.scope(TRNSIM_KEY(chip));
  chip.add(TRNSIM_KEY(name), "", "chip name, e.g. Trainium2");
  chip.add(TRNSIM_KEY(cores), "", "NeuronCores per chip").range(1, 4096);
  chip.add(TRNSIM_KEY(dies), "", "compute dies (chiplets) per package").range(1, 64);
  chip.add(TRNSIM_KEY(fp8_label), "", "what the chip's FP8 figure covers (cFP8, FP8, MXFP8/MXFP4)");
  auto tf = chip.scope(TRNSIM_KEY(tflops));
  const std::string d = "dense peak per chip as published, ";
  tf.add(TRNSIM_KEY(fp8), "TFLOPS", d + "FP8 (see fp8_label)");
  tf.add(TRNSIM_KEY(fp4), "TFLOPS", d + "FP4/MXFP4");
  tf.add(TRNSIM_KEY(bf16), "TFLOPS", d + "BF16/FP16/TF32");
  tf.add(TRNSIM_KEY(fp32), "TFLOPS", d + "FP32");
  tf.add(TRNSIM_KEY(sparse), "TFLOPS", "structured-sparse peak per chip as published");
  chip.add(TRNSIM_KEY(int8_tops), "TOPS", "INT8 peak per chip as published");

  auto hbm = chip.scope(TRNSIM_KEY(hbm));
  hbm.add(TRNSIM_KEY(capacity_gib), "GiB", "device memory (HBM) capacity per chip");
  hbm.add(TRNSIM_KEY(bandwidth_gbps), "GB/s", "HBM bandwidth per chip");
  hbm.add(TRNSIM_KEY(stacks), "", "HBM stacks per chip").range(1, 64);
  chip.add(TRNSIM_KEY(sbuf_mib), "MiB", "SBUF per chip as published (all cores)");

  auto dma = chip.scope(TRNSIM_KEY(dma));
  dma.add(TRNSIM_KEY(bandwidth_gbps), "GB/s", "DMA bandwidth per chip as published");
  dma.add(TRNSIM_KEY(engines), "", "DMA engines serving the NeuronCores").range(1, 65536);
  dma.add(TRNSIM_KEY(extra_engines), "", "further DMA engines (e.g. host-to-device)")
      .range(0, 1024);
  chip.add(TRNSIM_KEY(cc_cores), "", "collective-communication cores (CC-Cores) per chip")
      .range(0, 1024);

  auto lnc = chip.scope(TRNSIM_KEY(lnc));
  lnc.add(TRNSIM_KEY(degrees), "", "logical-core degrees the chip supports (physical cores each)")
      .range(1, 64);
  lnc.add(TRNSIM_KEY(default_degree), "", "the runtime's default logical-core degree").range(1, 64);
  lnc.add(TRNSIM_KEY(remote_semaphore_ns), "ns",
          "core_barrier: latency of one core's semaphore update in another core");

  auto link = chip.scope(TRNSIM_KEY(link));
  link.add(TRNSIM_KEY(version), "", "chip-to-chip link generation (NeuronLink-v2 ...)");
  link.add(TRNSIM_KEY(count), "", "chip-to-chip link ports per chip").range(1, 1024);
  link.add(TRNSIM_KEY(bandwidth_gbps), "GB/s", "chip-to-chip bandwidth per chip, all links");
  link.add(TRNSIM_KEY(nvlink_fusion), "", "NVIDIA NVLink Fusion support");
  chip.add(TRNSIM_KEY(memory_pool_chips), "", "chips that can pool their memory").range(1, 1 << 20);
  chip.add(TRNSIM_KEY(sbuf_layouts), "", "SBUF memory layouts")
      .one_of({"row-major", "col-major-2B", "col-major-4B"});
  auto power = chip.scope(TRNSIM_KEY(power));
  power.add(TRNSIM_KEY(tdp_w), "W", "chip power at full load (planner/energy.h)").range(1, 1e5);
  power.add(TRNSIM_KEY(static_w), "W", "chip power when powered and idle").range(0, 1e5);
  power.add(TRNSIM_KEY(hbm_pj_per_byte), "pJ/B", "energy of one byte read from or written to HBM")
      .range(0, 1e4);
  power
      .add(TRNSIM_KEY(link_pj_per_byte), "pJ/B", "energy of one byte sent over a chip-to-chip link")
      .range(0, 1e4);

  auto nm = root.scope(TRNSIM_KEY(numerics));
  nm.add(TRNSIM_KEY(overflow), "",
         "finite values beyond a format's max: inf (casts do not saturate) or saturate");
  nm.add(TRNSIM_KEY(nan), "", "NaN inputs: propagate (payload kept) or canonical default NaN");
  nm.add(TRNSIM_KEY(flush_subnormals), "", "results below the min normal become +-0");
  nm.add(TRNSIM_KEY(sr_random_bits), "bits", "random bits per stochastic-rounding decision")
      .range(1, 32);
  nm.add(TRNSIM_KEY(stochastic_rounding), "", "stochastic rounding is available (RNE is default)");
  const std::vector<std::string> fp8 = {"fp8_e4m3", "fp8_e4m3fn", "fp8_e5m2", "fp8_e3m4", "cfp8"};
  nm.add(TRNSIM_KEY(tensor_fp8_formats), "", "FP8 formats TensorE accepts as matmul inputs")
      .one_of(fp8);
  nm.add(TRNSIM_KEY(tensor_mx_formats), "", "MX formats nc_matmul_mx accepts")
      .one_of({"mxfp8_e5m2", "mxfp8_e4m3fn", "mxfp4_e2m1fn"});
}

namespace {

template <class S>
void add_system(S sys, std::string_view what) {
  sys.add(TRNSIM_KEY(name), "", fmt::format("{} name", what));
  sys.add(TRNSIM_KEY(chips), "", fmt::format("chips in one {}", what)).range(1, 1e9);
  sys.add(TRNSIM_KEY(members), "", fmt::format("systems one {} is built from", what)).range(1, 1e6);
  sys.add(TRNSIM_KEY(chips_per_member), "", "chips in each of those systems").range(1, 1e6);
  sys.add(TRNSIM_KEY(topology), "", "chip-to-chip topology");
  sys.add(TRNSIM_KEY(efa_gbps), "GB/s", fmt::format("EFA network bandwidth of one {}", what));
  auto pub = sys.scope(TRNSIM_KEY(published));
  const std::string t = fmt::format("published total of one {}: ", what);
  pub.add(TRNSIM_KEY(hbm_capacity_gib), "GiB", t + "HBM capacity");
  pub.add(TRNSIM_KEY(hbm_bandwidth_gbps), "GB/s", t + "HBM bandwidth");
  pub.add(TRNSIM_KEY(fp8_pflops), "PFLOPS", t + "dense FP8 compute");
  pub.add(TRNSIM_KEY(bf16_pflops), "PFLOPS", t + "dense BF16 compute");
  pub.add(TRNSIM_KEY(fp32_pflops), "PFLOPS", t + "dense FP32 compute");
}

}  // namespace

void add_system_keys(Schema& schema) {
  auto root = bind::root(schema);
  add_system(root.scope(TRNSIM_KEY(server), "server"), "server");
  add_system(root.scope(TRNSIM_KEY(ultraserver), "ultraserver"), "UltraServer");
  add_system(root.scope(TRNSIM_KEY(ultracluster), "ultracluster"), "UltraCluster");
}

}  // namespace trnsim::arch
