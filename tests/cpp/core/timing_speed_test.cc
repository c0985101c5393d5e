// How fast the timing model runs (the target is 5 million simulated instructions per host
// second in timing-only mode, in an optimised build). Printed, with only a loose floor asserted
// so that sanitizer and debug builds pass; bench/ measures the optimised figure.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "core/timing_run.h"
#include "core/timing_test_util.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

// On every compute engine: r0 = 0; loop { 8 independent ops; r0 += 1; branch while r0 < n }.
isa::Program loops(int iterations) {
  isa::Program p;
  for (Engine e : {Engine::kTensor, Engine::kVector, Engine::kScalar, Engine::kGpSimd}) {
    isa::Instruction set = make(Opcode::kRegSet, e, {});
    set.p.reg_dst = 0;
    p.append(set);
    for (int k = 0; k < 8; ++k) {
      if (e == Engine::kTensor) {
        p.append(matmul(psum(128, 128), sbuf(128, 128)));
      } else {
        const Opcode op = e == Engine::kScalar ? Opcode::kActivation : Opcode::kTensorScalar;
        p.append(unary(op, e, sbuf(128, 64, num::fp32(), 8192 * k), sbuf(128, 64, num::fp32())));
      }
    }
    isa::Instruction inc = make(Opcode::kRegAlu, e, {});
    inc.p.reg_dst = inc.p.reg_a = 0;
    inc.p.reg_imm = 1;
    inc.p.op0 = isa::AluOp::kAdd;
    p.append(inc);
    isa::Instruction br = make(Opcode::kBranch, e, {});
    br.p.reg_a = 0;
    br.p.reg_imm = iterations;
    br.p.op0 = isa::AluOp::kIsLt;
    br.p.branch_target = 1;
    p.append(br);
  }
  return p;
}

// Iterations per engine: TRNSIM_SPEED_ITERATIONS, else a size quick enough for debug builds.
int iterations() {
  const char* env = std::getenv("TRNSIM_SPEED_ITERATIONS");
  return env ? std::max(1, std::atoi(env)) : 2'500;
}

TEST(TimingSpeed, TimingOnlyInstructionsPerSecond) {
  const int n = iterations();
  const isa::Program p = loops(n);  // 4 engines x (1 + 10 n) instructions
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  const TimingResult r = run_timing(chip("trn2"), p);
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.faults.to_string();
  EXPECT_EQ(r.instructions, 4u * (1u + static_cast<uint64_t>(n) * 10u));
  const double rate = static_cast<double>(r.instructions) / s;
  std::printf(
      "timing-only: %llu instructions in %.3f s wall = %.2f M/s, %.3f s CPU = %.2f M/s "
      "(%llu events)\n",
      static_cast<unsigned long long>(r.instructions), s, rate * 1e-6, cpu,
      cpu > 0 ? static_cast<double>(r.instructions) / cpu * 1e-6 : 0.0,
      static_cast<unsigned long long>(r.events));
  EXPECT_GT(rate, 1e4);
}

}  // namespace
}  // namespace trnsim::core
