// A whole chip in one timing run (HARDWARE.md s1, s4, s6): program i runs on physical core i,
// every core on one simulator, so that their times interact where the hardware shares:
//  - one device HBM holds the tensors, which every program declares alike (the host writes
//    inputs and reads outputs once);
//  - one HBM stack per `chip.hbm.stacks`, each with its bandwidth pool (core/dma/hbm_pool.h):
//    core i sits on stack i / cores_per_stack (chip/lnc.h) and its HBM traffic goes through
//    that stack only (an assumption: a core's tensors live in its own stack, docs/chip.md);
//  - the cores form logical cores of `lnc` physical cores each (cores [g*lnc, (g+1)*lnc)),
//    inside one stack; core_barrier and sendrecv meet only inside a logical core (one
//    CoreGroup each), where a core's rank is its place in its logical core.
// The result is each core's figures and the chip's time, that of its slowest core.
// Functional-only runs compute values through the timing model and report no time.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "chip/chip_result.h"
#include "core/exec/hbm_tensor_io.h"
#include "core/timing/timing_run.h"
#include "isa/program.h"
#include "mem/hbm.h"
#include "profile/critical_path.h"
#include "profile/trace.h"

namespace trnsim::chip {

class ChipRunner {
 public:
  // `programs` (one per physical core, 1 .. chip.cores) must outlive the runner. `lnc`
  // physical cores per logical core must divide the program count and the cores of one HBM
  // stack. Throws InputError naming "programs" / "lnc" and the spec key, or when the
  // programs declare different HBM tensors. (Which LNC degrees a chip allows is checked by
  // chip::lnc_degree, as the CLI and Python do.)
  ChipRunner(const arch::ChipSpec& chip, std::vector<const isa::Program*> programs, int lnc = 1,
             core::RunMode mode = core::RunMode::kFunctionalTiming, core::RunLimits limits = {});
  ~ChipRunner();

  // The shared HBM's tensors by name (modes with values; InputError in timing-only mode).
  void write_tensor(std::string_view name, std::span<const uint8_t> bytes);
  std::vector<uint8_t> read_tensor(std::string_view name) const;
  void write_tensor_f32(std::string_view name, std::span<const float> values);
  void write_tensor_f32_range(std::string_view name, int64_t first, std::span<const float> values);
  std::vector<float> read_tensor_f32(std::string_view name) const;

  // Runs every core once. `trace` gets core i's tracks under process "core<i>". `paths`, when
  // given, is resized to the core count and gets core i's dependency graph (TimingOptions::path,
  // for its critical path and profile: chip/chip_profile.h); no time changes.
  ChipResult run(profile::Trace* trace = nullptr,
                 std::vector<profile::DependencyGraph>* paths = nullptr);

  int lnc() const { return lnc_; }

 private:
  core::HbmTensorIo& io() const;  // InputError in timing-only mode

  const arch::ChipSpec& chip_;
  std::vector<const isa::Program*> programs_;
  int lnc_;
  core::RunMode mode_;
  core::RunLimits limits_;
  std::unique_ptr<mem::Hbm> hbm_;
  std::unique_ptr<core::HbmTensorIo> io_;  // program 0's tensors (all programs declare them alike)
};

// The HBM stack of physical core `core` (core / cores_per_stack).
int stack_of(const arch::ChipSpec& chip, int core);
// HBM stacks of `chip` (chip.hbm.stacks; one per core when the spec does not say).
int hbm_stacks(const arch::ChipSpec& chip);

}  // namespace trnsim::chip
