// SPMD kernels on the physical cores of one logical core (HARDWARE.md s6): program i runs on
// rank i, all of them on one simulator (chip/chip_run.h with one logical core of every
// program), so that time is shared:
//  - one device HBM holds the tensors, which every program declares alike (the same kernel
//    traced once per program id);
//  - the cores sit on one HBM stack and share its bandwidth (core/dma/hbm_pool.h);
//  - core_barrier and sendrecv meet between them (core_group.h).
// The result is each core's figures and the logical core's time, that of its slowest core.
// Functional-only runs compute values through the timing model (the cores' order is timed;
// the values are those of a functional + timing run), reporting no time.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "chip/chip_result.h"
#include "chip/chip_run.h"
#include "core/timing/timing_result.h"
#include "core/timing/timing_run.h"
#include "isa/program.h"
#include "profile/trace.h"

namespace trnsim::chip {

using SpmdResult = ChipResult;

// "logical core of N physical cores (LNC=N): T us, I instructions, F faults", then each core's
// TimingResult::summary(): the text of an LNC run (CLI, Python).
std::string spmd_summary(std::span<const core::TimingResult> cores, Picoseconds total);

class SpmdRunner {
 public:
  // `programs` (one per physical core, at most the chip's cores per HBM stack) must outlive
  // the runner. Throws InputError when they declare different HBM tensors.
  SpmdRunner(const arch::ChipSpec& chip, std::vector<const isa::Program*> programs,
             core::RunMode mode = core::RunMode::kFunctionalTiming, core::RunLimits limits = {});

  // The shared HBM's tensors by name (modes with values; InputError in timing-only mode).
  void write_tensor(std::string_view name, std::span<const uint8_t> bytes) {
    chip_.write_tensor(name, bytes);
  }
  std::vector<uint8_t> read_tensor(std::string_view name) const { return chip_.read_tensor(name); }
  // The same through fp32 (cast with round-to-nearest-even).
  void write_tensor_f32(std::string_view name, std::span<const float> values) {
    chip_.write_tensor_f32(name, values);
  }
  void write_tensor_f32_range(std::string_view name, int64_t first, std::span<const float> values) {
    chip_.write_tensor_f32_range(name, first, values);
  }
  std::vector<float> read_tensor_f32(std::string_view name) const {
    return chip_.read_tensor_f32(name);
  }

  // Runs every core once. `trace` gets each core's tracks under process "core<rank>"; `paths`
  // each core's dependency graph (ChipRunner::run).
  SpmdResult run(profile::Trace* trace = nullptr,
                 std::vector<profile::DependencyGraph>* paths = nullptr) {
    return chip_.run(trace, paths);
  }

 private:
  ChipRunner chip_;  // one logical core of every program
};

}  // namespace trnsim::chip
