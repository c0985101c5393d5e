// The DMA engines' symmetry shortcut (core/dma/dma_engines.h): when every DMA of a program spreads
// evenly over all engines, one engine is simulated for all. It must give exactly what
// simulating each engine gives: times, statistics and the trace's DMA spans.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "core/timing/timing_program.h"
#include "core/timing/timing_run.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"
#include "kernels/registry.h"
#include "profile/trace.h"

namespace trnsim {
namespace {

using kernel_test::chip;

struct Run {
  core::TimingResult result;
  std::vector<std::tuple<std::string, int64_t, int64_t>> dma_spans;  // track, start, end
};

Run run(const arch::ChipSpec& c, const isa::Program& p, bool fold) {
  profile::Trace trace;
  core::TimingOptions o;
  o.fold_dma_engines = fold;
  o.trace = &trace;
  Run r{core::run_timing(c, p, o), {}};
  for (const auto& s : trace.spans()) {
    const std::string& track = trace.tracks()[s.track].name;
    if (track.find("dma") != std::string::npos) r.dma_spans.emplace_back(track, s.start.v, s.end.v);
  }
  std::sort(r.dma_spans.begin(), r.dma_spans.end());
  return r;
}

void expect_same(const Run& a, const Run& b) {
  kernel_test::expect_same_timing(a.result, b.result);
  EXPECT_FALSE(a.dma_spans.empty());
  EXPECT_EQ(a.dma_spans, b.dma_spans);
}

TEST(DmaFold, ExampleKernelsGiveTheSameResultFoldedOrNot) {
  int folded = 0;
  for (const std::string& g : kernel_test::kGenerations)
    for (const auto& [name, args] : kernel_test::kSmallExamples) {
      SCOPED_TRACE(g + " " + name);
      const isa::Program p = examples::build_kernel(name, chip(g), args);
      folded += core::TimingProgram(p, chip(g).core).dma_engines_symmetric();
      expect_same(run(chip(g), p, true), run(chip(g), p, false));
    }
  EXPECT_GT(folded, 0);  // the shortcut is exercised, not only the fallback
}

TEST(DmaFold, ProgramsWithPartialTransfersAreNotFolded) {
  // A 4-partition load uses one engine: the engines are not exchangeable.
  kernel::KernelBuilder kb(chip("trn2"));
  auto in = kb.input("x", num::bf16(), {4, 4096});
  auto out = kb.output("y", num::bf16(), {4, 4096});
  auto t = kb.sbuf("t", num::bf16(), {4, 4096});
  kb.dma_copy(t, in);
  kb.dma_copy(out, t);
  const isa::Program p = kb.build();
  EXPECT_FALSE(core::TimingProgram(p, chip("trn2").core).dma_engines_symmetric());
  expect_same(run(chip("trn2"), p, true), run(chip("trn2"), p, false));
}

}  // namespace
}  // namespace trnsim
