// Derived figures: everything trnsim computes from the spec rather than reads from it, in one
// resolver (STYLE.md practice 7). Each figure names the published key it stands next to, so a
// report shows the vendor's figure and trnsim's derivation side by side and says which is which
// (HARDWARE.md s10: they do not always agree).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"

namespace trnsim::arch {

struct DerivedFigure {
  std::string key;   // "chip.tflops.bf16", "ultraserver.hbm_capacity_gib", ...
  std::string unit;  // "TFLOPS", "GiB", "GB/s", ...
  double value = 0;
  std::string how;                  // "8 cores x 78.64 TFLOPS"
  std::vector<std::string> inputs;  // spec keys and derived figures it is computed from
  std::string published_key;        // the spec key holding the published counterpart, or ""
};

struct Derived {
  std::vector<DerivedFigure> figures;

  const DerivedFigure* find(std::string_view key) const;
  // The value of a figure that must exist (asserts).
  double at(std::string_view key) const;
};

// Per core:  core.tflops.<bf16|fp16|tf32|fp32|fp8|mxfp8|mxfp4|sparse>
//              = TensorE clock x pe_rows x pe_cols x 2 x matmul_rate (HARDWARE.md s1)
//            core.sbuf_mib, core.sbuf_usable_mib, core.psum_kib,
//            core.dma.bandwidth_{theoretical,practical}_gbps = engines x per-engine
// Per chip:  chip.tflops.<fp8|fp4|bf16|fp32|sparse> = cores x per core (fp8: the faster of the
//            core's fp8 and mxfp8 rates), chip.sbuf_mib, chip.psum_mib, chip.dma.engines,
//            chip.dma.bandwidth_gbps (theoretical), chip.dma.bandwidth_practical_gbps
// Systems:   <level>.chips = members x chips_per_member; <level>.hbm_capacity_gib,
//            <level>.hbm_bandwidth_gbps, <level>.{fp8,bf16,fp32}_pflops = chips x published chip
//            figure; <level>.{fp8,bf16,fp32}_pflops_from_cores = chips x the per-core derivation.
Derived derive(const ChipSpec& spec);

}  // namespace trnsim::arch
