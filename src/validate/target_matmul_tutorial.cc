// VALIDATION.md s2: the NKI matrix-multiplication tutorial's four kernels on one NeuronCore-v2
// (trn1.32xlarge), C[4096, 8192] = lhsT[8192, 4096].T @ rhs[8192, 8192], bf16 in, fp32 PSUM,
// bf16 out. Published: P99 latency over 10 iterations after 5 warm-ups; simulated: one run in
// timing-only mode (the kernels' time does not depend on the values). The four ratios between
// versions are checked too, as the target asks that they be preserved.
#include <fmt/format.h>

#include "arch/arch.h"
#include "core/timing/timing_run.h"
#include "kernels/registry.h"
#include "validate/target_list.h"

namespace trnsim::validate {

namespace {

struct Published {
  const char* kernel;
  double ms;
  double utilisation;  // HW FLOPs utilisation, %
};

constexpr Published kTable[] = {
    {"matmul_tiled", 51.80, 10.98},
    {"matmul_hoisted", 42.96, 13.24},
    {"matmul_blocked", 22.07, 26.51},
    {"matmul_fully_optimized", 6.97, 85.24},
};

// The one trn1 DMA figure that is not published: its summed rate cap was set so that these
// four kernels move their bytes as measured (spec/chips/trn1.toml), so none of them checks it.
constexpr const char* kFitted = "core.dma.core_bandwidth_gbps (trn1)";

}  // namespace

std::vector<Record> matmul_tutorial_records() {
  const arch::ChipSpec chip = arch::load_chip("trn1");
  std::vector<Record> out;
  std::vector<double> simulated_ms;
  for (const Published& p : kTable) {
    const isa::Program prog = examples::build_kernel(p.kernel, chip, {4096, 8192, 8192});
    const core::TimingResult r = core::run_timing(chip, prog);
    const double ms = static_cast<double>(r.latency().v) * 1e-9;  // a benchmark's latency
    simulated_ms.push_back(ms);
    out.push_back({"matmul-tutorial", p.kernel, "ms", p.ms, ms, 0.15, "VALIDATION.md s2",
                   fmt::format("trn1, 4096x8192x8192 bf16, timing-only; TensorE utilisation "
                               "{:.2f}% (published {:.2f}%){}",
                               100.0 * r.tensor_utilisation(), p.utilisation,
                               r.ok() ? "" : "; FAULTS: " + r.faults.to_string()),
                   kFitted});
  }
  // Speed-up of each version over the one before it (ordering and ratios preserved).
  for (size_t i = 1; i < std::size(kTable); ++i) {
    out.push_back({"matmul-tutorial", fmt::format("speedup {}/{}", i, i + 1), "x",
                   kTable[i - 1].ms / kTable[i].ms, simulated_ms[i - 1] / simulated_ms[i], 0.15,
                   "VALIDATION.md s2 (ratio of latencies)",
                   fmt::format("{} over {}", kTable[i].kernel, kTable[i - 1].kernel), kFitted});
  }
  return out;
}

}  // namespace trnsim::validate
