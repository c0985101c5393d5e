// Deferred signals (core/timing/timing_semaphores.h): in timing-only runs the signals of an
// instruction are recorded when it issues, with its retirement time, instead of being applied
// by a completion event. Every time must be what the completion events give: the result and
// every span of the trace, on every example kernel and generation, with fewer events.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/timing/timing_run.h"
#include "kernel_test_util.h"
#include "kernels/registry.h"
#include "profile/trace.h"

namespace trnsim {
namespace {

using kernel_test::chip;

struct Timed {
  core::TimingResult result;
  std::vector<std::tuple<int64_t, int64_t, uint32_t, uint32_t>> spans;  // start, end, track, label
};

Timed run(const arch::ChipSpec& c, const isa::Program& p, bool defer) {
  profile::Trace trace;
  core::TimingOptions o;
  o.defer_signals = defer;
  o.trace = &trace;
  Timed r{core::run_timing(c, p, o), {}};
  for (const auto& s : trace.spans()) r.spans.emplace_back(s.start.v, s.end.v, s.track, s.label);
  std::sort(r.spans.begin(), r.spans.end());
  return r;
}

TEST(DeferredSignals, ExampleKernelsGiveTheSameTimesWithFewerEvents) {
  for (const std::string& g : kernel_test::kGenerations)
    for (const auto& [name, args] : kernel_test::kSmallExamples) {
      SCOPED_TRACE(g + " " + name);
      const isa::Program p = examples::build_kernel(name, chip(g), args);
      const Timed a = run(chip(g), p, true), b = run(chip(g), p, false);
      ASSERT_TRUE(a.result.ok()) << a.result.faults.to_string();
      kernel_test::expect_same_timing(a.result, b.result);
      EXPECT_FALSE(a.spans.empty());
      EXPECT_EQ(a.spans, b.spans);
      EXPECT_LT(a.result.events, b.result.events);
    }
}

// A deadlocked program reports the same waits and values either way (deferred signals all
// count at the end of the run).
TEST(DeferredSignals, DeadlockReportsCountDeferredSignals) {
  isa::Program p = examples::build_kernel("softmax", chip("trn2"), {256, 512});
  // The last instruction that waits, of any stream, waits for more signals than ever come.
  isa::Instruction* last = nullptr;
  for (isa::Engine e : isa::kAllEngines)
    for (isa::Instruction& ins : p.stream(e))
      if (!ins.waits.empty()) last = &ins;
  ASSERT_NE(last, nullptr);
  last->waits[0].value += 1000;
  const Timed a = run(chip("trn2"), p, true), b = run(chip("trn2"), p, false);
  EXPECT_FALSE(a.result.ok());
  EXPECT_NE(a.result.faults.to_string().find("stays at"), std::string::npos);
  EXPECT_EQ(a.result.faults.to_string(), b.result.faults.to_string());
}

}  // namespace
}  // namespace trnsim
