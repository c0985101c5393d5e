// The examples under the timing model (core/timing/timing_run.h), which runs the five streams and
// the DMA queues concurrently in simulated time and computes values at each instruction's
// completion: a different schedule from the functional runner's. A race-free program gives the
// same bits under both, so this checks the semaphores the kernel API emitted on a schedule it
// did not choose; every run must also finish without faults (no deadlock).
//
// Kernels that use TensorE are compared in timing-only mode (time, no values) for now: the
// timing model executes a load_stationary's values when its background unit completes, which
// can be before the previous multiply_moving completes and uses the stationary it replaced
// (the hardware keeps the next stationary in the background until the matmul needs it).
#include <gtest/gtest.h>

#include <bit>
#include <functional>

#include "core/timing/timing_run.h"
#include "kernel_test_util.h"
#include "kernels/kernels.h"

namespace trnsim::kernel_test {
namespace {

struct Example {
  std::string name;
  std::function<isa::Program(const arch::ChipSpec&)> build;
  bool tensor_engine = true;  // uses TensorE (see above)
};

std::vector<Example> examples_small() {
  using namespace examples;
  return {
      {"matmul_tiled", [](const arch::ChipSpec& c) { return matmul_tiled(c, 256, 256, 1024); }},
      {"matmul_hoisted", [](const arch::ChipSpec& c) { return matmul_hoisted(c, 256, 256, 1024); }},
      {"matmul_blocked", [](const arch::ChipSpec& c) { return matmul_blocked(c, 256, 256, 1024); }},
      {"matmul_fully_optimized",
       [](const arch::ChipSpec& c) {
         return matmul_fully_optimized(c, 256, 512, 1024, {1, 1, 2});
       }},
      {"softmax", [](const arch::ChipSpec& c) { return softmax(c, 300, 128); }, false},
      {"layernorm", [](const arch::ChipSpec& c) { return layernorm(c, 256, 600); }, false},
      {"rmsnorm", [](const arch::ChipSpec& c) { return rmsnorm(c, 256, 128); }, false},
      {"attention", [](const arch::ChipSpec& c) { return attention(c, 512, 64, true); }},
  };
}

// Inputs for every input tensor: multiples of 1/64 in [-1, 1].
std::map<std::string, std::vector<float>> inputs_for(const isa::Program& p) {
  std::map<std::string, std::vector<float>> in;
  uint64_t seed = 100;
  for (const isa::HbmTensor& t : p.tensors)
    if (t.is_input()) in[t.name] = sixty_fourths(static_cast<size_t>(t.elements()), seed++);
  return in;
}

class TimedExamples : public ::testing::TestWithParam<std::string> {};

TEST_P(TimedExamples, SameBitsAsFunctionalAndNoFaults) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const Example& ex : examples_small()) {
    SCOPED_TRACE(ex.name);
    const isa::Program p = ex.build(spec);
    if (ex.tensor_engine) {
      const core::TimingResult r = core::run_timing(spec, p);
      ASSERT_TRUE(r.ok()) << r.summary();
      EXPECT_GT(r.total.v, 0);
      RecordProperty(ex.name + "_ns", std::to_string(r.total.v / 1000));
      continue;
    }
    const auto in = inputs_for(p);
    const auto want = run(spec, p, in);
    core::CoreRunner timed(spec, p, core::RunMode::kFunctionalTiming);
    for (const auto& [name, values] : in) timed.functional().write_tensor_f32(name, values);
    const core::TimingResult r = timed.run();
    ASSERT_TRUE(r.ok()) << r.faults.size() << " faults: " << r.summary();
    EXPECT_GT(r.total.v, 0);
    for (const auto& [name, values] : want) {
      const std::vector<float> got = timed.functional().read_tensor_f32(name);
      ASSERT_EQ(got.size(), values.size());
      size_t diff = 0;
      for (size_t i = 0; i < got.size(); ++i)
        diff += std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(values[i]);
      EXPECT_EQ(diff, 0u) << name;
    }
    RecordProperty(ex.name + "_ns", std::to_string(r.total.v / 1000));
  }
}

INSTANTIATE_TEST_SUITE_P(Generations, TimedExamples, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
