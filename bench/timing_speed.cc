// Speed of the timing model in timing-only mode (issue 3 s8; targets and the command:
// bench/README.md, scripts/bench.sh).
//
//  BM_TimingOnly/<kernel>        simulated instructions per host CPU second over an example
//                                kernel (items_per_second = dynamic instructions; the events
//                                the run handled per instruction alongside). Target >= 5 M/s
//                                on one host core.
//  BM_FullyOptimized/{build,run,build_and_run}
//                                wall time of the NKI tutorial's fully optimised matmul at
//                                4096 x 8192 x 8192 on trn1: building the program with the
//                                kernel API, running it timing-only, and both. Target < 2 s
//                                for build + run.
//  BM_Reference_EventLoop        the same-run host reference: a plain std::priority_queue
//                                event loop (items_per_second = events), so that figures from
//                                different (noisy) machines can be compared as ratios to it.
//
// The chip is loaded once, outside every timed region. The simulator is single-threaded, so CPU
// time is one core's time; wall time is reported for the build + run figure as its target says.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "core/timing/timing_program.h"
#include "core/timing/timing_run.h"
#include "kernels/registry.h"

namespace {

using namespace trnsim;

const arch::ChipSpec& trn1() {
  static const arch::ChipSpec chip = arch::load_chip("trn1");
  return chip;
}

// Runs `program` timing-only; an error (a fault) stops the benchmark rather than timing a run
// that ended early.
bool run_once(benchmark::State& state, const isa::Program& program, uint64_t& instructions,
              uint64_t* events = nullptr) {
  const core::TimingResult r = core::run_timing(trn1(), program);
  if (!r.ok()) {
    state.SkipWithError(("timing run faulted: " + r.faults.to_string()).c_str());
    return false;
  }
  instructions = r.instructions;
  if (events) *events = r.events;
  benchmark::DoNotOptimize(r.total);
  return true;
}

void BM_TimingOnly(benchmark::State& state, const std::string& kernel,
                   const std::vector<int64_t>& args) {
  const isa::Program program = examples::build_kernel(kernel, trn1(), args);
  uint64_t instructions = 0, events = 0;
  for (auto _ : state)
    if (!run_once(state, program, instructions, &events)) break;
  state.SetItemsProcessed(static_cast<int64_t>(instructions) * state.iterations());
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["events_per_instruction"] =
      static_cast<double>(events) / static_cast<double>(instructions);
}

// Diagnostic: the preparation pass alone (core/timing/timing_program.h), part of every timing run.
void BM_TimingPrepare(benchmark::State& state, const std::string& kernel,
                      const std::vector<int64_t>& args) {
  const isa::Program program = examples::build_kernel(kernel, trn1(), args);
  for (auto _ : state) {
    const core::TimingProgram prepared(program, trn1().core);
    benchmark::DoNotOptimize(prepared.num_semaphores());
  }
  state.SetItemsProcessed(static_cast<int64_t>(program.num_instructions()) * state.iterations());
}

// The NKI tutorial kernel 4 at its measured setup (VALIDATION.md s2): the registry defaults.
isa::Program build_fully_optimized() {
  return examples::build_kernel("matmul_fully_optimized", trn1(), {4096, 8192, 8192});
}

void BM_FullyOptimizedBuild(benchmark::State& state) {
  size_t instructions = 0;
  for (auto _ : state) {
    const isa::Program p = build_fully_optimized();
    instructions = p.num_instructions();
    benchmark::DoNotOptimize(instructions);
  }
  state.counters["instructions"] = static_cast<double>(instructions);
}

void BM_FullyOptimizedRun(benchmark::State& state) {
  const isa::Program program = build_fully_optimized();
  uint64_t instructions = 0;
  for (auto _ : state)
    if (!run_once(state, program, instructions)) break;
  state.SetItemsProcessed(static_cast<int64_t>(instructions) * state.iterations());
  state.counters["instructions"] = static_cast<double>(instructions);
}

void BM_FullyOptimizedBuildAndRun(benchmark::State& state) {
  uint64_t instructions = 0;
  for (auto _ : state) {
    const isa::Program program = build_fully_optimized();
    if (!run_once(state, program, instructions)) break;
  }
  state.counters["instructions"] = static_cast<double>(instructions);
}

// Host reference: a discrete-event loop in its plainest form. A min-heap holds kLive pending
// events (time, sequence); each step pops the earliest and schedules one at a pseudo-random
// later time (a 64-bit LCG), kEvents steps in all. Same work on every run and machine.
void BM_Reference_EventLoop(benchmark::State& state) {
  constexpr int64_t kEvents = 4'000'000;
  constexpr int kLive = 256;
  struct Event {
    uint64_t time, seq;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  uint64_t checksum = 0;
  for (auto _ : state) {
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> q;
    uint64_t rng = 0x9e3779b97f4a7c15ULL, seq = 0;
    auto next = [&rng] {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      return rng >> 40;  // 24 bits: a delay of up to ~16 M time units
    };
    for (int i = 0; i < kLive; ++i) q.push({next(), seq++});
    for (int64_t i = 0; i < kEvents; ++i) {
      const Event e = q.top();
      q.pop();
      checksum += e.seq;
      q.push({e.time + next(), seq++});
    }
    benchmark::DoNotOptimize(checksum);
  }
  state.SetItemsProcessed(kEvents * state.iterations());
  state.counters["events"] = static_cast<double>(kEvents);  // per iteration
}

// The two matmul tutorial extremes at the tutorial's shape (few large DMAs; loads inside the K
// loop), attention (every engine) and layernorm (VectorE / ScalarE), the last two larger than
// their registry defaults (1.9 k and 90 instructions) so that the rate, not the fixed cost of a
// run, is measured.
struct KernelCase {
  const char* label;
  const char* kernel;
  std::vector<int64_t> args;
};
const int kRegistered = [] {
  const KernelCase cases[] = {
      {"matmul_fully_optimized", "matmul_fully_optimized", {4096, 8192, 8192}},
      {"matmul_tiled", "matmul_tiled", {4096, 8192, 8192}},
      {"attention_s8192", "attention", {8192, 128, 0}},
      {"layernorm_65536x2048", "layernorm", {65536, 2048}},
  };
  for (const KernelCase& c : cases)
    benchmark::RegisterBenchmark(("BM_TimingOnly/" + std::string(c.label)).c_str(), BM_TimingOnly,
                                 std::string(c.kernel), c.args)
        ->Unit(benchmark::kMillisecond);
  for (const KernelCase& c : cases)
    benchmark::RegisterBenchmark(("BM_TimingPrepare/" + std::string(c.label)).c_str(),
                                 BM_TimingPrepare, std::string(c.kernel), c.args)
        ->Unit(benchmark::kMillisecond);
  return 0;
}();

}  // namespace

BENCHMARK(BM_FullyOptimizedBuild)
    ->Name("BM_FullyOptimized/build")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FullyOptimizedRun)
    ->Name("BM_FullyOptimized/run")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FullyOptimizedBuildAndRun)
    ->Name("BM_FullyOptimized/build_and_run")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Reference_EventLoop)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
