// A kernel on several ranks at once (NKI nki.collectives): rank r is a logical core of `lnc`
// physical cores r*lnc .. r*lnc+lnc-1, program p running on physical core p, with HBM tensors
// of its own that its cores share (as an LNC run's: chip/chip_run.h, core_barrier and sendrecv
// between them); every core runs on one simulator, and the collective instructions meet as
// rank_group.h says, priced by the fabric layer on `system`. Physical core p sits on chip
// p / cores-per-chip of the system, HBM stack chip::stack_of(p % cores), whose bandwidth it
// shares with the cores on that stack.
// The result is each rank's figures and the run's time, that of its slowest rank.
// Functional-only runs compute values through the timing model and report no time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "chip/chip_result.h"
#include "core/exec/hbm_tensor_io.h"
#include "core/timing/timing_run.h"
#include "fabric/rank_group.h"
#include "fabric/runtime.h"
#include "fabric/system.h"
#include "isa/program.h"
#include "mem/hbm.h"
#include "profile/trace.h"

namespace trnsim::fabric {

// "N ranks (logical cores of LNC=1) on <system>: T us, I instructions, F faults", the launch
// line, then each rank's TimingResult::summary().
std::string rank_summary(const chip::ChipResult& r, std::string_view system);

class RankRunner {
 public:
  // `programs` (one per physical core, lnc per rank, at most the system's cores) and `chip`
  // (the cores' spec: the system's chip or a what-if of it) must outlive the runner. `groups`
  // are the replica groups the programs' collectives name by index: every list holds ranks
  // 0 .. ranks-1, each rank at most once per group. The programs of a rank declare the same
  // HBM tensors. Throws InputError naming the group, list, rank or program.
  RankRunner(const arch::ChipSpec& chip, SystemSpec system, RuntimeSpec runtime,
             std::vector<const isa::Program*> programs, ReplicaGroups groups, int lnc = 1,
             core::RunMode mode = core::RunMode::kFunctionalTiming, core::RunLimits limits = {});
  ~RankRunner();

  int ranks() const { return static_cast<int>(programs_.size()) / lnc_; }
  int lnc() const { return lnc_; }
  const SystemSpec& system() const { return system_; }
  // Rank `rank`'s HBM tensors by name (modes with values; InputError in timing-only mode).
  void write_tensor(int rank, std::string_view name, std::span<const uint8_t> bytes);
  std::vector<uint8_t> read_tensor(int rank, std::string_view name) const;

  // Runs every rank once. `trace` gets physical core p's tracks under process "core<p>"; the
  // result has one entry per physical core.
  chip::ChipResult run(profile::Trace* trace = nullptr);

 private:
  core::HbmTensorIo& io(int rank) const;  // InputError for a bad rank or timing-only mode

  const arch::ChipSpec& chip_;
  SystemSpec system_;
  RuntimeSpec runtime_;
  std::vector<const isa::Program*> programs_;
  ReplicaGroups groups_;
  int lnc_;
  core::RunMode mode_;
  core::RunLimits limits_;
  std::vector<std::unique_ptr<mem::Hbm>> hbm_;          // one per rank (modes with values)
  std::vector<std::unique_ptr<core::HbmTensorIo>> io_;  // one per rank
};

}  // namespace trnsim::fabric
