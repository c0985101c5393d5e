#include "chip/chip_result.h"

#include <fmt/format.h>

namespace trnsim::chip {

bool ChipResult::ok() const {
  for (const core::TimingResult& r : cores)
    if (!r.ok()) return false;
  return true;
}

std::string ChipResult::faults_text() const {
  std::string s;
  for (size_t c = 0; c < cores.size(); ++c)
    for (const mem::Fault& f : cores[c].faults) s += fmt::format("core {}: {}\n", c, f.to_string());
  return s;
}

void ChipResult::add(core::TimingResult r) {
  total = std::max(total, r.total);
  launch = std::max(launch, r.launch);
  instructions += r.instructions;
  cores.push_back(std::move(r));
}

std::string ChipResult::summary() const { return chip_summary(cores, total, lnc); }

std::string chip_summary(std::span<const core::TimingResult> cores, Picoseconds total, int lnc) {
  uint64_t instructions = 0;
  size_t faults = 0;
  for (const core::TimingResult& r : cores) {
    instructions += r.instructions;
    faults += r.faults.size();
  }
  const size_t n = cores.size();
  const std::string what =
      lnc <= 0 || static_cast<size_t>(lnc) == n
          ? fmt::format("logical core of {} physical cores (LNC={})", n, n)
          : fmt::format("chip of {} physical cores ({} logical cores of LNC={})", n,
                        n / static_cast<size_t>(lnc), lnc);
  std::string s = fmt::format("{}: {:.3f} us, {} instructions, {} faults\n", what,
                              static_cast<double>(total.v) * 1e-6, instructions, faults);
  const Picoseconds launch = n > 0 ? cores[0].launch : Picoseconds(0);
  if (launch.v > 0)
    s += fmt::format("kernel launch: {:.3f} us of start-up and tear-down, latency {:.3f} us\n",
                     static_cast<double>(launch.v) * 1e-6,
                     static_cast<double>((total + launch).v) * 1e-6);
  for (size_t c = 0; c < n; ++c) s += fmt::format("-- physical core {}\n{}", c, cores[c].summary());
  return s;
}

}  // namespace trnsim::chip
