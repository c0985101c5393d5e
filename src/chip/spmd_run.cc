#include "chip/spmd_run.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "base/error.h"
#include "chip/core_group.h"
#include "chip/lnc.h"
#include "core/core_timing.h"
#include "core/executor.h"

namespace trnsim::chip {

bool SpmdResult::ok() const {
  for (const core::TimingResult& r : cores)
    if (!r.ok()) return false;
  return true;
}

std::string SpmdResult::faults_text() const {
  std::string s;
  for (size_t c = 0; c < cores.size(); ++c)
    for (const mem::Fault& f : cores[c].faults) s += fmt::format("core {}: {}\n", c, f.to_string());
  return s;
}

std::string SpmdResult::summary() const { return spmd_summary(cores, total); }

std::string spmd_summary(std::span<const core::TimingResult> cores, Picoseconds total) {
  uint64_t instructions = 0;
  size_t faults = 0;
  for (const core::TimingResult& r : cores) {
    instructions += r.instructions;
    faults += r.faults.size();
  }
  std::string s = fmt::format(
      "logical core of {} physical cores (LNC={}): {:.3f} us, {} instructions, {} faults\n",
      cores.size(), cores.size(), static_cast<double>(total.v) * 1e-6, instructions, faults);
  for (size_t c = 0; c < cores.size(); ++c)
    s += fmt::format("-- physical core {}\n{}", c, cores[c].summary());
  return s;
}

SpmdRunner::SpmdRunner(const arch::ChipSpec& chip, std::vector<const isa::Program*> programs,
                       core::RunMode mode, core::RunLimits limits)
    : chip_(chip), programs_(std::move(programs)), mode_(mode), limits_(limits) {
  if (programs_.empty()) throw InputError("spmd", "programs", "no program to run");
  if (static_cast<int>(programs_.size()) > cores_per_stack(chip))
    throw InputError("spmd", "programs",
                     fmt::format("{} programs for a logical core of at most {} physical cores "
                                 "(the cores of one HBM stack on {})",
                                 programs_.size(), cores_per_stack(chip), chip.meta.name));
  const isa::Program& first = *programs_[0];
  for (size_t i = 1; i < programs_.size(); ++i)
    if (programs_[i]->tensors != first.tensors)
      throw InputError("spmd", fmt::format("program {}", i),
                       "declares other HBM tensors than program 0; the cores of a logical core "
                       "share one HBM (declare every tensor alike in every program)");
  if (mode_ != core::RunMode::kTimingOnly) {
    hbm_ = std::make_unique<mem::Hbm>(core::device_hbm_bytes(chip));
    io_ = std::make_unique<core::HbmTensorIo>(first, *hbm_, core::exec_options_for(chip).policy);
  }
}

SpmdRunner::~SpmdRunner() = default;

core::HbmTensorIo& SpmdRunner::io() const {
  if (!io_) throw InputError("a timing-only run has no data (HBM tensors)");
  return *io_;
}

void SpmdRunner::write_tensor(std::string_view name, std::span<const uint8_t> bytes) {
  io().write(name, bytes);
}

std::vector<uint8_t> SpmdRunner::read_tensor(std::string_view name) const {
  return io().read(name);
}

void SpmdRunner::write_tensor_f32(std::string_view name, std::span<const float> values) {
  io().write_f32(name, values);
}

void SpmdRunner::write_tensor_f32_range(std::string_view name, int64_t first,
                                        std::span<const float> values) {
  io().write_f32_range(name, first, values);
}

std::vector<float> SpmdRunner::read_tensor_f32(std::string_view name) const {
  return io().read_f32(name);
}

SpmdResult SpmdRunner::run(profile::Trace* trace) {
  const size_t n = programs_.size();
  sim::Simulator sim;
  core::HbmPool pool(core::hbm_stack_bandwidth(chip_));  // one stack: the cores share it
  CoreGroup group(chip_, static_cast<int>(n));
  std::vector<std::unique_ptr<core::Executor>> execs;
  std::vector<std::unique_ptr<core::TimedExecutor>> adapters;
  std::vector<std::unique_ptr<core::CoreTiming>> cores;
  for (size_t i = 0; i < n; ++i) {
    core::TimingOptions opts;
    opts.trace = trace;
    opts.core_index = static_cast<int>(i);
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
    cores.push_back(std::make_unique<core::CoreTiming>(chip_, *programs_[i], opts, sim, pool,
                                                       &group, static_cast<int>(i)));
    group.attach(static_cast<int>(i), *cores.back(), exec);
  }
  for (auto& c : cores) c->start();
  sim.run(limits_.max_time);
  if (!sim.idle())
    for (auto& c : cores) c->stop_at_time_limit(limits_.max_time);
  group.report_unmatched();

  SpmdResult out;
  for (size_t i = 0; i < n; ++i) {
    core::TimingResult r = cores[i]->finish();
    if (hbm_)
      for (const mem::Fault& f : execs[i]->faults()) r.faults.add(f);
    if (mode_ == core::RunMode::kFunctionalOnly) {  // values only: no time to report
      const core::TimingResult timed = std::move(r);
      r = core::TimingResult{};
      r.instructions = timed.instructions;
      for (isa::Engine e : isa::kAllEngines)
        r.engines[static_cast<size_t>(e)].instructions =
            timed.engines[static_cast<size_t>(e)].instructions;
      for (const mem::Fault& f : timed.faults) r.faults.add(f);
    }
    out.total = std::max(out.total, r.total);
    out.instructions += r.instructions;
    out.cores.push_back(std::move(r));
  }
  return out;
}

}  // namespace trnsim::chip
