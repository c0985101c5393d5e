// A timed run of one program on one NeuronCore with what a profiler shows (docs/profile.md):
// where each engine's time went and the bound (TimingResult), the critical path with its
// instructions named (timing_path.h), the roofline with MFU and HFU, and per instruction class
// (an opcode on an engine) its executions, engine time, FLOPs and HBM bytes. The run is
// timing-only (values do not change time); its figures are those of run_timing().
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/chip_spec.h"
#include "core/timing/timing_path.h"
#include "core/timing/timing_result.h"
#include "core/timing/timing_run.h"
#include "isa/program.h"
#include "profile/roofline.h"

namespace trnsim::core {

struct ProfileOptions {
  size_t top = 10;  // instructions listed on the critical path
  RunLimits limits;
};

// The instructions of one name and source line on one engine (an unrolled loop's many copies
// are one item),
// or the transfers they triggered, and their share of the critical path.
struct PathItem {
  std::string name;  // "multiply_moving 'mm0'": mnemonic and the instruction's name
  isa::Engine engine = isa::Engine::kTensor;  // their engine (transfers: the trigger's)
  bool transfer = false;  // the DMA transfers they triggered, not the instructions
  size_t index = 0;       // the earliest one's place in its engine's stream
  int line = 0;           // its source line (0: none)
  std::string source;     // "kernel.py:27" (isa::source_of; "" unknown): items differ by it
  uint64_t statics = 0;   // static instructions in the item
  uint64_t count = 0;     // executions on the path
  Picoseconds time;       // their share of the path
};

struct ProfilePath {
  uint64_t length = 0;                                // instructions and transfers on the path
  Picoseconds time;                                   // the run's end
  std::array<Picoseconds, kNumPathLanes> per_lane{};  // lanes: engines, then the DMA queues
  std::array<uint64_t, kNumPathEdges> edges{};        // nodes by what released them (PathEdge)
  std::vector<PathItem> top;                          // longest first
};

// Executions of one opcode on one engine, summed over the run.
struct InstructionClass {
  isa::Engine engine = isa::Engine::kTensor;
  isa::Opcode op = isa::Opcode::kNop;
  uint64_t count = 0;
  Picoseconds busy;            // datapath occupancy (ii) of its executions
  double flops = 0;            // useful TensorE FLOPs (matmuls)
  double issued_flops = 0;     // every TensorE FLOP (transposes included)
  double seconds_at_peak = 0;  // TensorE time at the full rate of its dtype
  int64_t hbm_bytes = 0;       // HBM read + written by its transfers
};

struct CoreProfile {
  std::string chip;
  TimingResult result;
  ProfilePath path;
  profile::Roofline roofline;
  double chip_hbm_bytes_per_s = 0;        // the whole chip's HBM bandwidth (for context)
  std::vector<InstructionClass> classes;  // those executed, by engine then opcode
};

// Runs `program` timing-only on one core of `chip` and profiles it. Throws InputError as
// run_timing does; a run's faults are in result.faults.
CoreProfile profile_program(const arch::ChipSpec& chip, const isa::Program& program,
                            const ProfileOptions& options = {});

// The profile of a run already made: `program`'s `result` on one core of `chip` and the
// dependency graph the run recorded (TimingOptions::path), with `top` items on the critical
// path. profile_program() is run_timing() then this; a chip run profiles each core with it
// (chip/chip_profile.h). The roofline's time is the core's own (result.total).
CoreProfile profile_run(const arch::ChipSpec& chip, const isa::Program& program,
                        TimingResult result, const profile::DependencyGraph& graph, size_t top);

// The bytes per second HBM can give one core running alone: its stack's bandwidth, or less
// when the core's DMA engines cannot move that much (engines x practical rate, the core caps).
double core_hbm_ceiling(const arch::ChipSpec& chip);

// "pe", "dve", "act", "pool", "sp", "dma" (the lanes of the path).
const char* path_lane_name(int lane);
// "TensorE", "VectorE", "ScalarE", "GpSimd", "SyncE", "DMA", "HBM", "latency": a bound verdict
// in words.
std::string bound_name(const std::string& verdict);

}  // namespace trnsim::core
