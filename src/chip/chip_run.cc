#include "chip/chip_run.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "chip/core_group.h"
#include "chip/lnc.h"
#include "core/exec/executor.h"
#include "core/timing/core_timing.h"

namespace trnsim::chip {

int hbm_stacks(const arch::ChipSpec& chip) {
  return std::max(chip.chip.hbm.stacks.value_or(chip.chip.cores), 1);
}

int stack_of(const arch::ChipSpec& chip, int core) {
  return std::min(core / cores_per_stack(chip), hbm_stacks(chip) - 1);
}

ChipRunner::ChipRunner(const arch::ChipSpec& chip, std::vector<const isa::Program*> programs,
                       int lnc, core::RunMode mode, core::RunLimits limits)
    : chip_(chip), programs_(std::move(programs)), lnc_(lnc), mode_(mode), limits_(limits) {
  const int n = static_cast<int>(programs_.size());
  if (n == 0) throw InputError("chip", "programs", "no program to run");
  for (int i = 0; i < n; ++i)
    if (programs_[static_cast<size_t>(i)] == nullptr)
      throw InputError("chip", fmt::format("programs[{}]", i), "no program (null)");
  if (n > chip.chip.cores)
    throw InputError("programs", "chip.cores",
                     fmt::format("{} programs for {} physical cores ({} has chip.cores = {})", n,
                                 chip.chip.cores, chip.meta.name, chip.chip.cores));
  if (lnc_ < 1 || n % lnc_ != 0)
    throw InputError("lnc", "chip.lnc.degrees",
                     fmt::format("LNC={} does not divide the {} physical cores run into logical "
                                 "cores",
                                 lnc_, n));
  if (cores_per_stack(chip) % lnc_ != 0)
    throw InputError("lnc", "chip.hbm.stacks",
                     fmt::format("LNC={}: {} has {} core(s) per HBM stack; the cores of a "
                                 "logical core must share one",
                                 lnc_, chip.meta.name, cores_per_stack(chip)));
  const isa::Program& first = *programs_[0];
  for (size_t i = 1; i < programs_.size(); ++i)
    if (programs_[i]->tensors != first.tensors)
      throw InputError("spmd", fmt::format("program {}", i),
                       "declares other HBM tensors than program 0; the cores of a chip "
                       "share one HBM (declare every tensor alike in every program)");
  if (mode_ != core::RunMode::kTimingOnly) {
    hbm_ = std::make_unique<mem::Hbm>(core::device_hbm_bytes(chip));
    io_ = std::make_unique<core::HbmTensorIo>(first, *hbm_, core::exec_options_for(chip).policy);
  }
}

ChipRunner::~ChipRunner() = default;

core::HbmTensorIo& ChipRunner::io() const {
  if (!io_) throw InputError("a timing-only run has no data (HBM tensors)");
  return *io_;
}

void ChipRunner::write_tensor(std::string_view name, std::span<const uint8_t> bytes) {
  io().write(name, bytes);
}

std::vector<uint8_t> ChipRunner::read_tensor(std::string_view name) const {
  return io().read(name);
}

void ChipRunner::write_tensor_f32(std::string_view name, std::span<const float> values) {
  io().write_f32(name, values);
}

void ChipRunner::write_tensor_f32_range(std::string_view name, int64_t first,
                                        std::span<const float> values) {
  io().write_f32_range(name, first, values);
}

std::vector<float> ChipRunner::read_tensor_f32(std::string_view name) const {
  return io().read_f32(name);
}

// A functional-only run reports values, counts and faults, no time.
core::TimingResult without_time(core::TimingResult timed) {
  core::TimingResult r;
  r.instructions = timed.instructions;
  for (isa::Engine e : isa::kAllEngines)
    r.engines[static_cast<size_t>(e)].instructions =
        timed.engines[static_cast<size_t>(e)].instructions;
  for (const mem::Fault& f : timed.faults) r.faults.add(f);
  return r;
}

ChipResult ChipRunner::run(profile::Trace* trace, std::vector<profile::DependencyGraph>* paths) {
  const size_t n = programs_.size();
  if (paths != nullptr) paths->assign(n, profile::DependencyGraph{});  // no reallocation below
  const size_t groups = n / static_cast<size_t>(lnc_);
  sim::Simulator sim;
  std::vector<std::unique_ptr<core::HbmPool>> pools;  // one per stack
  for (int s = 0; s < hbm_stacks(chip_); ++s)
    pools.push_back(std::make_unique<core::HbmPool>(core::hbm_stack_bandwidth(chip_)));
  std::vector<std::unique_ptr<CoreGroup>> logical;  // one per logical core
  for (size_t g = 0; g < groups; ++g) logical.push_back(std::make_unique<CoreGroup>(chip_, lnc_));
  std::vector<std::unique_ptr<core::Executor>> execs;
  std::vector<std::unique_ptr<core::TimedExecutor>> adapters;
  std::vector<std::unique_ptr<core::CoreTiming>> cores;
  for (size_t i = 0; i < n; ++i) {
    const int core = static_cast<int>(i), rank = core % lnc_;
    CoreGroup& group = *logical[i / static_cast<size_t>(lnc_)];
    core::TimingOptions opts;
    opts.trace = trace;
    opts.path = paths != nullptr ? &(*paths)[i] : nullptr;
    opts.core_index = core;
    opts.max_instructions = limits_.max_instructions;
    opts.max_time = limits_.max_time;
    core::Executor* exec = nullptr;
    if (hbm_) {
      execs.push_back(std::make_unique<core::Executor>(
          chip_.core, core::exec_options_for(chip_, programs_[i]->seed), *hbm_));
      exec = execs.back().get();
      adapters.push_back(std::make_unique<core::TimedExecutor>(*exec));
      opts.executor = adapters.back().get();
    }
    core::HbmPool& pool = *pools[static_cast<size_t>(stack_of(chip_, core))];
    cores.push_back(
        std::make_unique<core::CoreTiming>(chip_, *programs_[i], opts, sim, pool, &group, rank));
    group.attach(rank, *cores.back(), exec);
  }
  for (auto& c : cores) c->start();
  sim.run(limits_.max_time);
  if (!sim.idle())
    for (auto& c : cores) c->stop_at_time_limit(limits_.max_time);
  for (auto& g : logical) g->report_unmatched();

  ChipResult out;
  out.lnc = lnc_;
  for (size_t i = 0; i < n; ++i) {
    core::TimingResult r = cores[i]->finish();
    if (hbm_)
      for (const mem::Fault& f : execs[i]->faults()) r.faults.add(f);
    if (mode_ == core::RunMode::kFunctionalOnly) r = without_time(std::move(r));
    out.add(std::move(r));
  }
  return out;
}

}  // namespace trnsim::chip
