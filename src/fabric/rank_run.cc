#include "fabric/rank_run.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "base/error.h"
#include "chip/chip_run.h"
#include "chip/core_group.h"
#include "chip/lnc.h"
#include "core/exec/executor.h"
#include "core/timing/core_timing.h"

namespace trnsim::fabric {

namespace {

void check_groups(const ReplicaGroups& groups, int ranks) {
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty())
      throw InputError("groups", fmt::format("group {}", g), "a replica group has no rank list");
    std::set<int> seen;
    for (size_t l = 0; l < groups[g].size(); ++l) {
      if (groups[g][l].empty())
        throw InputError("groups", fmt::format("group {} list {}", g, l), "an empty rank list");
      for (int r : groups[g][l]) {
        if (r < 0 || r >= ranks)
          throw InputError(
              "groups", fmt::format("group {} list {}", g, l),
              fmt::format("rank {} is not one of the run's ranks 0..{}", r, ranks - 1));
        if (!seen.insert(r).second)
          throw InputError(
              "groups", fmt::format("group {} list {}", g, l),
              fmt::format("rank {} is in two lists of the group (or twice in one)", r));
      }
    }
  }
}

}  // namespace

std::string rank_summary(const chip::ChipResult& r, std::string_view system) {
  size_t faults = 0;
  for (const core::TimingResult& c : r.cores) faults += c.faults.size();
  const auto lnc = static_cast<size_t>(std::max(r.lnc, 1));
  std::string s = fmt::format(
      "{} ranks (logical cores of LNC={}) on {}: {:.3f} us, {} "
      "instructions, {} faults\n",
      r.cores.size() / lnc, lnc, system, static_cast<double>(r.total.v) * 1e-6, r.instructions,
      faults);
  if (r.launch.v > 0)
    s += fmt::format("kernel launch: {:.3f} us of start-up and tear-down, latency {:.3f} us\n",
                     static_cast<double>(r.launch.v) * 1e-6,
                     static_cast<double>(r.latency().v) * 1e-6);
  for (size_t i = 0; i < r.cores.size(); ++i)
    s += lnc == 1 ? fmt::format("-- rank {}\n{}", i, r.cores[i].summary())
                  : fmt::format("-- rank {} physical core {}\n{}", i / lnc, i % lnc,
                                r.cores[i].summary());
  return s;
}

RankRunner::RankRunner(const arch::ChipSpec& chip, SystemSpec system, RuntimeSpec runtime,
                       std::vector<const isa::Program*> programs, ReplicaGroups groups, int lnc,
                       core::RunMode mode, core::RunLimits limits)
    : chip_(chip),
      system_(std::move(system)),
      runtime_(std::move(runtime)),
      programs_(std::move(programs)),
      groups_(std::move(groups)),
      lnc_(lnc),
      mode_(mode),
      limits_(limits) {
  const auto p = static_cast<int64_t>(programs_.size());
  if (p == 0) throw InputError("ranks", "programs", "no program to run");
  for (int64_t i = 0; i < p; ++i)
    if (programs_[static_cast<size_t>(i)] == nullptr)
      throw InputError("ranks", fmt::format("programs[{}]", i), "no program (null)");
  if (lnc_ < 1 || p % lnc_ != 0 || chip::cores_per_stack(chip_) % lnc_ != 0)
    throw InputError("lnc", "chip.lnc.degrees",
                     fmt::format("LNC={}: ranks of {} physical cores each for {} programs, on "
                                 "{} ({} core(s) per HBM stack)",
                                 lnc_, lnc_, p, chip_.meta.name, chip::cores_per_stack(chip_)));
  const int64_t cores =
      system_.chips_per_server * system_.servers * static_cast<int64_t>(system_.chip.chip.cores);
  if (p > cores)
    throw InputError("ranks", "cluster.servers",
                     fmt::format("{} ranks of LNC={} on {}, which has {} physical cores", p / lnc_,
                                 lnc_, system_.name, cores));
  check_groups(groups_, ranks());
  for (int64_t i = 0; i < p; ++i)
    if (programs_[static_cast<size_t>(i)]->tensors !=
        programs_[static_cast<size_t>(i - i % lnc_)]->tensors)
      throw InputError("ranks", fmt::format("program {}", i),
                       "declares other HBM tensors than the first core of its rank; the cores "
                       "of a rank share its HBM (declare every tensor alike)");
  if (mode_ != core::RunMode::kTimingOnly) {
    for (int r = 0; r < ranks(); ++r) {
      hbm_.push_back(std::make_unique<mem::Hbm>(core::device_hbm_bytes(chip_)));
      io_.push_back(std::make_unique<core::HbmTensorIo>(*programs_[static_cast<size_t>(r * lnc_)],
                                                        *hbm_.back(),
                                                        core::exec_options_for(chip_).policy));
    }
  }
}

RankRunner::~RankRunner() = default;

core::HbmTensorIo& RankRunner::io(int rank) const {
  if (io_.empty()) throw InputError("a timing-only run has no data (HBM tensors)");
  if (rank < 0 || rank >= ranks())
    throw InputError("rank", std::to_string(rank),
                     fmt::format("the run has ranks 0..{}", ranks() - 1));
  return *io_[static_cast<size_t>(rank)];
}

void RankRunner::write_tensor(int rank, std::string_view name, std::span<const uint8_t> bytes) {
  io(rank).write(name, bytes);
}

std::vector<uint8_t> RankRunner::read_tensor(int rank, std::string_view name) const {
  return io(rank).read(name);
}

chip::ChipResult RankRunner::run(profile::Trace* trace) {
  const size_t n = programs_.size();
  sim::Simulator sim;
  RankGroup group(system_, runtime_, groups_, ranks(), lnc_, sim);
  // At LNC>1 the cores of a rank meet in a group of their own, which hands collectives on.
  std::vector<std::unique_ptr<chip::CoreGroup>> logical;
  if (lnc_ > 1)
    for (int r = 0; r < ranks(); ++r) {
      logical.push_back(std::make_unique<chip::CoreGroup>(chip_, lnc_));
      logical.back()->forward_collectives(&group, r * lnc_);
    }
  // One bandwidth pool per (chip, HBM stack) that holds a rank.
  std::map<std::pair<int, int>, std::unique_ptr<core::HbmPool>> pools;
  std::vector<std::unique_ptr<core::Executor>> execs;
  std::vector<std::unique_ptr<core::TimedExecutor>> adapters;
  std::vector<std::unique_ptr<core::CoreTiming>> cores;
  const int per_chip = std::max(chip_.chip.cores, 1);
  for (size_t i = 0; i < n; ++i) {
    const int phys = static_cast<int>(i), rank = phys / lnc_;
    core::TimingOptions opts;
    opts.trace = trace;
    opts.core_index = phys;
    opts.max_instructions = limits_.max_instructions;
    opts.max_time = limits_.max_time;
    core::Executor* exec = nullptr;
    if (!hbm_.empty()) {
      execs.push_back(std::make_unique<core::Executor>(
          chip_.core, core::exec_options_for(chip_, programs_[i]->seed),
          *hbm_[static_cast<size_t>(rank)]));
      exec = execs.back().get();
      adapters.push_back(std::make_unique<core::TimedExecutor>(*exec));
      opts.executor = adapters.back().get();
    }
    auto& pool = pools[{phys / per_chip, chip::stack_of(chip_, phys % per_chip)}];
    if (!pool) pool = std::make_unique<core::HbmPool>(core::hbm_stack_bandwidth(chip_));
    // The core's group: the rank's cores (its place among them) or, at LNC=1, the ranks.
    core::CrossCore* cross = &group;
    if (lnc_ > 1) cross = logical[static_cast<size_t>(rank)].get();
    cores.push_back(std::make_unique<core::CoreTiming>(chip_, *programs_[i], opts, sim, *pool,
                                                       cross, lnc_ > 1 ? phys % lnc_ : phys));
    if (lnc_ > 1) logical[static_cast<size_t>(rank)]->attach(phys % lnc_, *cores.back(), exec);
    group.attach(phys, *cores.back(), exec);
  }
  for (auto& c : cores) c->start();
  sim.run(limits_.max_time);
  if (!sim.idle())
    for (auto& c : cores) c->stop_at_time_limit(limits_.max_time);
  group.report_unmatched();
  for (auto& g : logical) g->report_unmatched();

  chip::ChipResult out;
  out.lnc = lnc_;
  for (size_t i = 0; i < n; ++i) {
    core::TimingResult r = cores[i]->finish();
    if (!hbm_.empty())
      for (const mem::Fault& f : execs[i]->faults()) r.faults.add(f);
    if (mode_ == core::RunMode::kFunctionalOnly) r = chip::without_time(std::move(r));
    out.add(std::move(r));
  }
  return out;
}

}  // namespace trnsim::fabric
