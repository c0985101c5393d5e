// Bit-accurate BF16 matmul throughput in functional mode against the host's BLAS (issue 3 s8;
// targets and the command: bench/README.md, scripts/bench.sh).
//
//  BM_FunctionalMatmulBf16/M/K/N/tiles_m   the NKI tutorial's fully optimised matmul kernel
//        (examples/kernels/matmul_fully_optimized.cc) run by FunctionalRunner, inputs written
//        as bf16; FLOP/s = 2 M K N per run() (setup and input writes are not timed). Every run
//        is checked against sgemm first, so a faulting or wrong run is never timed as fast.
//  BM_Sgemm/M/K/N                           the same-run reference: cblas_sgemm (one thread) on
//        the same M, K, N and the same values (lhsT[K, M]^T @ rhs[K, N], fp32).
//        Target: functional >= 25 % of sgemm.
//  BM_FunctionalMatmulBf16Phases/...        where the functional run's time goes: the same
//        kernel through the timing model with the functional executor wrapped; counters
//        pct_<mnemonic> = host time executing that opcode's semantics as a share of all
//        semantics time (what a functional-only run spends), timing_model_pct_of_run = the
//        timing model's own share of this functional + timing run.
//  BM_MatmulKernelTile / BM_SgemmTile       the PE-array arithmetic alone
//        (core/exec/matmul_kernel.h) on one tutorial tile (K 128, M 128, N 512) against sgemm
//        on the same tile.
//
// Everything runs on one host thread (the simulator is single-threaded; OpenBLAS is set to one
// thread), and times are CPU times.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "core/exec/functional_runner.h"
#include "core/exec/matmul_kernel.h"
#include "core/timing/timing_run.h"
#include "isa/op_table.h"
#include "kernels/registry.h"

namespace {

using namespace trnsim;

const arch::ChipSpec& trn1() {
  static const arch::ChipSpec chip = arch::load_chip("trn1");
  return chip;
}

void single_thread_blas() {
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(1);
#endif
}

// Deterministic values in [-1, 1) that are exact bf16 (low 16 bits of the fp32 pattern zero).
std::vector<float> bf16_values(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (float& x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const float f = static_cast<float>(static_cast<double>(s >> 40) / 8388608.0 - 1.0);
    x = std::bit_cast<float>(std::bit_cast<uint32_t>(f) & 0xffff0000u);
  }
  return v;
}

// The bf16 bytes of exact-bf16 floats (little-endian: the high half of each fp32 pattern).
std::vector<uint8_t> bf16_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = static_cast<uint16_t>(std::bit_cast<uint32_t>(v[i]) >> 16);
    std::memcpy(&b[2 * i], &h, 2);
  }
  return b;
}

// One M x K x N problem: the program, its inputs and the sgemm result to check against.
struct Problem {
  int64_t m, k, n;
  isa::Program program;
  std::vector<float> lhsT, rhs;  // [K, M], [K, N]
  std::vector<uint8_t> lhsT_bytes, rhs_bytes;
  std::vector<float> expected;  // [M, N], sgemm

  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(k) * n; }
};

void sgemm(const Problem& p, float* out) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(p.m), static_cast<int>(p.n),
              static_cast<int>(p.k), 1.0f, p.lhsT.data(), static_cast<int>(p.m), p.rhs.data(),
              static_cast<int>(p.n), 0.0f, out, static_cast<int>(p.n));
}

const Problem& problem(int64_t m, int64_t k, int64_t n, int64_t tiles_m) {
  static std::map<std::array<int64_t, 4>, Problem> cache;
  auto it = cache.find({m, k, n, tiles_m});
  if (it != cache.end()) return it->second;
  Problem p{m,
            k,
            n,
            examples::build_kernel("matmul_fully_optimized", trn1(), {m, k, n, tiles_m}),
            bf16_values(k * m, 1),
            bf16_values(k * n, 2),
            {},
            {},
            {}};
  p.lhsT_bytes = bf16_bytes(p.lhsT);
  p.rhs_bytes = bf16_bytes(p.rhs);
  p.expected.resize(static_cast<size_t>(m * n));
  single_thread_blas();
  sgemm(p, p.expected.data());
  return cache.emplace(std::array<int64_t, 4>{m, k, n, tiles_m}, std::move(p)).first->second;
}

// The simulator's result agrees with sgemm within bf16 accumulation error (the kernel adds its
// K-block partial sums in bf16): a sanity check, not the bit-exactness tests of tests/cpp/core.
std::string check(const Problem& p, const std::vector<float>& got) {
  float scale = 0, worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, std::abs(p.expected[i]));
    const float d = std::abs(got[i] - p.expected[i]);
    if (!(d <= worst)) worst = std::isnan(d) ? INFINITY : d;
  }
  if (worst <= 0.02f * scale) return {};
  return "result differs from sgemm: max |diff| " + std::to_string(worst) + " of max |value| " +
         std::to_string(scale);
}

std::unique_ptr<core::FunctionalRunner> loaded_runner(const Problem& p) {
  auto r = std::make_unique<core::FunctionalRunner>(trn1(), p.program);
  r->write_tensor("lhsT", p.lhsT_bytes);
  r->write_tensor("rhs", p.rhs_bytes);
  return r;
}

void BM_FunctionalMatmulBf16(benchmark::State& state) {
  const Problem& p = problem(state.range(0), state.range(1), state.range(2), state.range(3));
  {
    auto runner = loaded_runner(p);
    const core::RunResult r = runner->run();
    const std::string err = r.ok ? check(p, runner->read_tensor_f32("result"))
                                 : "functional run faulted: " + runner->faults().to_string();
    if (!err.empty()) {
      state.SkipWithError(err.c_str());
      return;
    }
    state.counters["instructions"] = static_cast<double>(r.instructions);
  }
  for (auto _ : state) {
    state.PauseTiming();
    auto runner = loaded_runner(p);
    state.ResumeTiming();
    benchmark::DoNotOptimize(runner->run());
    state.PauseTiming();
    runner.reset();
    state.ResumeTiming();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(p.flops(), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Sgemm(benchmark::State& state) {
  single_thread_blas();
  const Problem& p = problem(state.range(0), state.range(1), state.range(2), state.range(3));
  std::vector<float> out(static_cast<size_t>(p.m * p.n));
  for (auto _ : state) {
    sgemm(p, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(p.flops(), benchmark::Counter::kIsIterationInvariantRate);
}

// The functional executor behind the timing model's interface, timing each instruction.
class PhaseTimer : public core::InstructionExecutor {
 public:
  explicit PhaseTimer(core::Executor& exec) : exec_(exec) {}
  void execute(const isa::Instruction& ins, isa::Engine engine, uint64_t id) override {
    const auto t0 = std::chrono::steady_clock::now();
    exec_.execute(ins, engine, id);
    seconds[static_cast<size_t>(ins.op)] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  int32_t register_value(isa::Engine engine, int reg) override {
    return exec_.register_value(engine, reg);
  }
  std::array<double, isa::kNumOpcodes> seconds{};

 private:
  core::Executor& exec_;
};

void BM_FunctionalMatmulBf16Phases(benchmark::State& state) {
  const Problem& p = problem(state.range(0), state.range(1), state.range(2), state.range(3));
  std::array<double, isa::kNumOpcodes> seconds{};
  double total = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto runner = loaded_runner(p);
    PhaseTimer timer(runner->executor());
    core::TimingOptions o;
    o.executor = &timer;
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    const core::TimingResult r = core::run_timing(trn1(), p.program, o);
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok() || !runner->faults().empty()) {
      state.SkipWithError("functional + timing run faulted");
      return;
    }
    for (size_t i = 0; i < seconds.size(); ++i) seconds[i] += timer.seconds[i];
  }
  double executed = 0;
  for (double s : seconds) executed += s;
  for (size_t i = 0; i < seconds.size(); ++i)
    if (seconds[i] > 0.001 * executed)
      state.counters["pct_" + std::string(isa::mnemonic(static_cast<isa::Opcode>(i)))] =
          100.0 * seconds[i] / executed;
  state.counters["timing_model_pct_of_run"] = 100.0 * (total - executed) / total;
  state.counters["FLOP/s"] =
      benchmark::Counter(p.flops(), benchmark::Counter::kIsIterationInvariantRate);
}

// One tutorial tile: stationary [K 128, M 128], moving [K 128, N 512].
constexpr int64_t kTileK = 128, kTileM = 128, kTileN = 512;
constexpr double kTileFlops = 2.0 * kTileK * kTileM * kTileN;

void BM_MatmulKernelTile(benchmark::State& state) {
  const std::vector<float> w = bf16_values(kTileK * kTileM, 3), x = bf16_values(kTileK * kTileN, 4);
  std::vector<float> out(kTileM * kTileN);
  for (auto _ : state) {
    core::matmul_fp32(w.data(), x.data(), kTileK, kTileM, kTileN, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(kTileFlops, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_SgemmTile(benchmark::State& state) {
  single_thread_blas();
  const std::vector<float> w = bf16_values(kTileK * kTileM, 3), x = bf16_values(kTileK * kTileN, 4);
  std::vector<float> out(kTileM * kTileN);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kTileM, kTileN, kTileK, 1.0f, w.data(),
                kTileM, x.data(), kTileN, 0.0f, out.data(), kTileN);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(kTileFlops, benchmark::Counter::kIsIterationInvariantRate);
}

// 512 x 2048 x 2048: the tutorial kernel with 4 M tiles per block (the tutorial's default of 16
// needs M a multiple of 2048), 4.3 GFLOP, a fraction of a second per run.
void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N", "tiles_m"})
      ->Args({512, 2048, 2048, 4})
      ->Unit(benchmark::kMillisecond);
}

}  // namespace

BENCHMARK(BM_FunctionalMatmulBf16)->Apply(shapes);
BENCHMARK(BM_Sgemm)->Apply(shapes);
BENCHMARK(BM_FunctionalMatmulBf16Phases)->Apply(shapes)->Iterations(1);
BENCHMARK(BM_MatmulKernelTile)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SgemmTile)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
