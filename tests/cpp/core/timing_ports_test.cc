// Shared-port conflicts are data (PortSpec): on Trn1 (NC-v2) VectorE and GpSimd cannot access
// SBUF at once, so independent work on the two serialises; on Trn2 (NC-v3) it overlaps.
#include <gtest/gtest.h>

#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"
#include "profile/trace.h"
#include "sim/clock.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

isa::Program vector_and_gpsimd(int vector_ops) {
  isa::Program p;
  for (int i = 0; i < vector_ops; ++i)
    p.append(unary(Opcode::kTensorScalar, Engine::kVector, sbuf(128, 4096, num::fp32()),
                   sbuf(128, 4096, num::fp32())));
  p.append(unary(Opcode::kTensorScalar, Engine::kGpSimd, sbuf(128, 4096, num::fp32(), 1 << 16),
                 sbuf(128, 4096, num::fp32(), 1 << 16)));
  return p;
}

Picoseconds busy(const TimingResult& r, Engine e) { return r.engines[static_cast<size_t>(e)].busy; }

TEST(TimingPorts, VectorAndGpSimdSerialiseOnTrn1AndOverlapOnTrn2) {
  for (const char* gen : {"trn1", "trn2"}) {
    const TimingResult r = run_timing(chip(gen), vector_and_gpsimd(1));
    ASSERT_TRUE(r.ok()) << r.faults.to_string();
    const Picoseconds dve = busy(r, Engine::kVector), pool = busy(r, Engine::kGpSimd);
    if (chip(gen).core.ports.vector_gpsimd_sbuf_conflict) {
      EXPECT_GE(r.total, dve + pool) << gen;  // one after the other
    } else {
      EXPECT_LT(r.total, dve + pool) << gen;  // side by side
      EXPECT_LT(r.total.v, std::max(dve, pool).v * 12 / 10) << gen;
    }
  }
}

TEST(TimingPorts, ArbitrationIsFirstComeFirstServed) {
  // Trn1: VectorE has 3 back-to-back SBUF ops; GpSimd asks for the port while the first one
  // streams, so it goes second, not after all three.
  profile::Trace trace;
  TimingOptions o;
  o.trace = &trace;
  const TimingResult r = run_timing(chip("trn1"), vector_and_gpsimd(3), o);
  ASSERT_TRUE(r.ok()) << r.faults.to_string();
  const sim::Clock pool = sim::Clock::from_ghz(chip("trn1").core.gpsimd.clock_ghz);
  std::vector<profile::Span> dve, gp;
  for (const auto& s : profile::sorted_spans(trace)) {
    const std::string& n = trace.tracks()[s.track].name;
    if (n == "dve") dve.push_back(s);
    if (n == "pool") gp.push_back(s);
  }
  ASSERT_EQ(dve.size(), 3u);
  ASSERT_EQ(gp.size(), 1u);
  EXPECT_EQ(gp[0].start, pool.next_edge(dve[0].end));
  EXPECT_GE(dve[1].start, gp[0].end);
}

TEST(TimingPorts, VectorAndScalarSharePsumOnTrn1) {
  isa::Program p;
  p.append(
      unary(Opcode::kTensorCopy, Engine::kVector, sbuf(128, 2048, num::fp32()), psum(128, 2048)));
  p.append(unary(Opcode::kActivation, Engine::kScalar, sbuf(128, 2048, num::fp32(), 1 << 16),
                 psum(128, 2048, num::fp32(), 8192)));
  const TimingResult r1 = run_timing(chip("trn1"), p), r2 = run_timing(chip("trn2"), p);
  EXPECT_GE(r1.total, busy(r1, Engine::kVector) + busy(r1, Engine::kScalar));
  EXPECT_LT(r2.total, busy(r2, Engine::kVector) + busy(r2, Engine::kScalar));
}

}  // namespace
}  // namespace trnsim::core
