// What a timed run of one NeuronCore reports (its figures are derived from integer-picosecond
// times; rates are computed here, at the edge, never stored as time).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/units.h"
#include "isa/engine.h"
#include "isa/opcode.h"
#include "isa/program.h"
#include "mem/fault.h"

namespace trnsim::core {

// Why an engine's next instruction waited (timing_sequencer.h): the time from when its unit
// could take it until it issued, by the constraint that held it, in turn:
//   kSemaphore  a semaphore another engine signals (waited_on says which engine);
//   kDma        a semaphore a DMA transfer's completion signals;
//   kPort       a shared SBUF/PSUM port another engine held;
//   kOwn        the engine's own earlier instruction (its result not yet retired, or TensorE's
//               background LoadStationary);
//   kBarrier    a core_barrier, until the other cores of the logical core reached theirs.
enum class Stall : uint8_t { kSemaphore, kDma, kPort, kOwn, kBarrier };
inline constexpr int kNumStalls = 5;
const char* stall_name(Stall s);  // "semaphore", "dma", "port", "own", "barrier"

struct EngineStats {
  uint64_t instructions = 0;
  Picoseconds busy;             // sum of datapath occupancy (ii) of its instructions
  Picoseconds background_busy;  // TensorE: LoadStationary on the background unit
  // Time covered by at least one of its instructions, each from its issue to its completion
  // (what a profiler's timeline shows as the engine active: it counts the pipeline latency
  // of a dependent instruction, which `busy` leaves out).
  Picoseconds active;
  Picoseconds finish;  // latest completion of its instructions
  std::array<uint64_t, isa::kNumOpcodes> by_opcode{};
  std::array<Picoseconds, kNumStalls> stall{};  // by Stall
  Picoseconds stalled(Stall s) const { return stall[static_cast<size_t>(s)]; }
  std::array<Picoseconds, isa::kNumEngines> waited_on{};  // kSemaphore time by signalling engine
  // What is left of the run: total - busy - stalls (before its first and after its last
  // instruction, and issue gaps too short to block on anything).
  Picoseconds idle(Picoseconds total) const;
};

struct DmaStats {
  uint64_t transfers = 0;  // DMA instructions completed
  uint64_t pieces = 0;     // per-engine parts of them
  int64_t bytes = 0;       // bytes streamed by the DMA engines
  int64_t hbm_read_bytes = 0;
  int64_t hbm_write_bytes = 0;
  std::vector<Picoseconds> engine_busy;  // per DMA engine
  Picoseconds finish;
};

struct TimingResult {
  Picoseconds total;  // when the last instruction or transfer completed
  // A kernel launch's start-up and tear-down around the run (spec core.launch.overhead_ns);
  // not in `total`, which is the execution the engines' percentages are taken over.
  Picoseconds launch;
  Picoseconds latency() const { return total + launch; }  // what a launch takes, end to end
  std::array<EngineStats, isa::kNumEngines> engines{};
  DmaStats dma;
  double tensor_flops = 0;       // multiply-accumulate FLOPs done by TensorE (2 per MAC)
  double tensor_peak_flops = 0;  // per-core BF16 peak, FLOP/s (arch derive: core.tflops.bf16)
  int64_t sbuf_high_water = 0;   // bytes per partition: one past the highest SBUF byte touched
  int64_t psum_high_water = 0;
  isa::SpillSummary spill;  // the program's SBUF spills (kernel/placement.h)
  uint64_t instructions = 0;
  uint64_t events = 0;    // discrete events handled (a cost figure of the simulator itself)
  mem::FaultList faults;  // deadlock, step limit, register faults, executor faults

  bool ok() const { return faults.empty(); }
  double busy_percent(isa::Engine e) const;
  double active_percent(isa::Engine e) const;  // EngineStats::active over total
  // FLOPs done / (total time x BF16 peak): the "HW FLOPs utilisation" of VALIDATION.md s2.
  double tensor_utilisation() const;
  // HBM bytes (read + write) / total time, in GB/s.
  double hbm_gbps() const;
  // What bounds the run: the engine or the DMA whose busy time is the largest share of the
  // total, "latency" when none is busy half of the time (the run waits on dependencies), with
  // the shares (busy / total per engine, the busiest DMA engine for "dma").
  struct Bound {
    std::string verdict;
    std::array<double, isa::kNumEngines> engine_share{};
    double dma_share = 0;
  };
  Bound bound() const;
  // A text report: time, per-engine busy and instruction counts, TensorE utilisation, DMA and
  // HBM figures, high-water marks and faults.
  std::string summary() const;
};

}  // namespace trnsim::core
