#include "chip/chip_profile.h"

#include <algorithm>

#include "chip/chip_run.h"
#include "core/timing/core_timing.h"
#include "profile/critical_path.h"

namespace trnsim::chip {

namespace {

constexpr double kBytesPerGB = 1e9;
constexpr double kPsPerS = 1e12;

double per_second(double amount, Picoseconds t) {
  return t.v > 0 ? amount * kPsPerS / static_cast<double>(t.v) : 0.0;
}

double hbm_bytes_of(const core::TimingResult& r) {
  return static_cast<double>(r.dma.hbm_read_bytes + r.dma.hbm_write_bytes);
}

}  // namespace

bool ChipProfile::ok() const {
  return std::all_of(cores.begin(), cores.end(),
                     [](const core::CoreProfile& c) { return c.result.ok(); });
}

ChipProfile profile_chip(const arch::ChipSpec& chip, const std::vector<isa::Program>& programs,
                         int lnc, const core::ProfileOptions& options) {
  std::vector<const isa::Program*> ptrs;
  for (const isa::Program& p : programs) ptrs.push_back(&p);
  ChipRunner runner(chip, ptrs, lnc, core::RunMode::kTimingOnly, options.limits);
  std::vector<profile::DependencyGraph> graphs;
  ChipResult run = runner.run(nullptr, &graphs);

  ChipProfile p;
  p.chip = chip.meta.name;
  p.lnc = lnc;
  p.total = run.total;
  p.launch = run.launch;
  p.instructions = run.instructions;
  p.hbm_peak_bytes_per_s = chip.chip.hbm.bandwidth_gbps * kBytesPerGB;
  const auto stack_peak = static_cast<double>(core::hbm_stack_bandwidth(chip));
  for (size_t i = 1; i < run.cores.size(); ++i)
    if (run.cores[i].total > run.cores[static_cast<size_t>(p.slowest)].total)
      p.slowest = static_cast<int>(i);
  for (size_t i = 0; i < programs.size(); ++i) {
    const core::TimingResult& r = run.cores[i];  // moved into its profile last
    const auto c = static_cast<int>(i);
    const int s = stack_of(chip, c);
    if (p.stacks.empty() || p.stacks.back().stack != s)
      p.stacks.push_back(StackTraffic{s, {}, 0, 0, stack_peak});
    p.stacks.back().cores.push_back(c);
    p.stacks.back().hbm_bytes += hbm_bytes_of(r);
    p.hbm_bytes += hbm_bytes_of(r);
    p.cores.push_back(
        core::profile_run(chip, programs[i], std::move(run.cores[i]), graphs[i], options.top));
    p.flops += p.cores.back().roofline.flops;
    p.issued_flops += p.cores.back().roofline.issued_flops;
    p.peak_flops = p.cores.back().roofline.peak_flops;
  }
  for (StackTraffic& s : p.stacks) s.bytes_per_s = per_second(s.hbm_bytes, p.total);
  p.hbm_bytes_per_s = per_second(p.hbm_bytes, p.total);
  const double capacity = static_cast<double>(p.cores.size()) * p.peak_flops;
  p.mfu = capacity > 0 ? per_second(p.flops, p.total) / capacity : 0.0;
  p.hfu = capacity > 0 ? per_second(p.issued_flops, p.total) / capacity : 0.0;
  if (!p.cores.empty()) p.bound = p.cores[static_cast<size_t>(p.slowest)].roofline.verdict;
  return p;
}

}  // namespace trnsim::chip
