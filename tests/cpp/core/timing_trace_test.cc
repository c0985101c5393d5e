// Determinism (ARCHITECTURE.md: same inputs give bit-identical traces) and the shape of the
// exported trace: valid JSON, one track per engine, DMA queue tracks, instruction args.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"
#include "profile/chrome_trace.h"
#include "profile/summary.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

// Load, matmul, evacuate PSUM on ScalarE, post-process on VectorE and GpSimd, store.
isa::Program mixed_program() {
  isa::Program p;
  for (int i = 0; i < 4; ++i) {
    const int64_t off = i * 4096;
    p.append(with_signal(
        dma_copy(sbuf(128, 128, num::bf16(), off), hbm(128, 128, num::bf16(), off * 64)), 0));
    p.append(with_wait(load_stationary(sbuf(128, 128, num::bf16(), off)), 0, i + 1));
    isa::Instruction mm = matmul(psum(128, 512), sbuf(128, 512, num::bf16(), 65536));
    mm.name = "mm" + std::to_string(i);
    p.append(with_signal(mm, 1));
    p.append(with_signal(with_wait(unary(Opcode::kActivation, Engine::kScalar,
                                         sbuf(128, 512, num::fp32(), 98304), psum(128, 512)),
                                   1, i + 1),
                         2));
    p.append(with_signal(
        with_wait(unary(Opcode::kTensorScalar, Engine::kVector, sbuf(128, 512, num::bf16(), 131072),
                        sbuf(128, 512, num::fp32(), 98304)),
                  2, i + 1),
        3));
    p.append(make(Opcode::kIota, Engine::kGpSimd, {sbuf(128, 256, num::fp32(), 150000)}));
    p.append(with_wait(dma_copy(hbm(128, 512, num::bf16(), 1 << 24),
                                sbuf(128, 512, num::bf16(), 131072), Engine::kSync, 3),
                       3, i + 1));
  }
  return p;
}

std::string traced_json(const isa::Program& p, TimingResult* out = nullptr) {
  profile::Trace trace;
  TimingOptions o;
  o.trace = &trace;
  TimingResult r = run_timing(chip("trn2"), p, o);
  EXPECT_TRUE(r.ok()) << r.faults.to_string();
  if (out) *out = std::move(r);
  return profile::chrome_trace_json(trace);
}

TEST(TimingTrace, TwoRunsGiveIdenticalTraceAndResults) {
  const isa::Program p = mixed_program();
  TimingResult a, b;
  const std::string ja = traced_json(p, &a), jb = traced_json(p, &b);
  EXPECT_EQ(ja, jb);
  EXPECT_EQ(a.total, b.total);
  EXPECT_EQ(a.summary(), b.summary());
  EXPECT_EQ(a.events, b.events);
}

TEST(TimingTrace, JsonIsValidWithOneTrackPerEngineAndDmaQueues) {
  TimingResult r;
  const auto j = nlohmann::json::parse(traced_json(mixed_program(), &r));
  std::multiset<std::string> threads;
  size_t complete = 0;
  bool matmul_args = false;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") threads.insert(e.at("args").at("name"));
    if (e.at("ph") != "X") continue;
    ++complete;
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    if (e.at("name") == "multiply_moving 'mm0'") {
      matmul_args = true;
      EXPECT_EQ(e.at("args").at("opcode"), "multiply_moving");
      EXPECT_NE(e.at("args").at("operands").get<std::string>().find("psum[0:128]"),
                std::string::npos);
    }
  }
  EXPECT_TRUE(matmul_args);
  for (const char* engine : {"pe", "dve", "act", "pool", "sp"})
    EXPECT_EQ(threads.count(engine), 1u) << engine;
  EXPECT_EQ(threads.count("dma0.q0"), 1u);
  EXPECT_EQ(threads.count("dma15.q3"), 1u);
  EXPECT_EQ(complete, r.instructions + r.dma.pieces);
}

TEST(TimingTrace, ResultSummaryNamesEveryFigure) {
  TimingResult r;
  traced_json(mixed_program(), &r);
  const std::string s = r.summary();
  for (const char* key : {"total time", "TensorE", "DMA:", "high-water", "multiply_moving"})
    EXPECT_NE(s.find(key), std::string::npos) << key;
  EXPECT_EQ(r.engines[0].by_opcode[static_cast<size_t>(Opcode::kMultiplyMoving)], 4u);
  EXPECT_EQ(r.dma.transfers, 8u);
  EXPECT_EQ(r.psum_high_water, 512 * 4);
  EXPECT_GT(r.sbuf_high_water, 150000);
}

}  // namespace
}  // namespace trnsim::core
