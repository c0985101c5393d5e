// What the timing model adds to a trace besides spans (timing_trace.h): flows from each
// semaphore's producer to its waiter and from a DMA instruction to its pieces, and the
// counters (SBUF / PSUM bytes in use, DMA queue depth, HBM bandwidth); none changes a time.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"
#include "profile/perfetto_trace.h"
#include "profile/proto_decode.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

// Load a tile (SP's DMA), matmul it into PSUM, evacuate on ScalarE, store (SP's DMA), twice.
isa::Program pipeline() {
  isa::Program p;
  for (int i = 0; i < 2; ++i) {
    const int64_t off = i * 8192;
    p.append(with_signal(
        dma_copy(sbuf(128, 512, num::bf16(), off), hbm(128, 512, num::bf16(), off * 128)), 0));
    p.append(with_signal(
        with_wait(matmul(psum(128, 512), sbuf(128, 512, num::bf16(), off)), 0, i + 1), 1));
    p.append(
        with_signal(with_wait(unary(Opcode::kActivation, Engine::kScalar,
                                    sbuf(128, 512, num::fp32(), 65536 + off * 2), psum(128, 512)),
                              1, i + 1),
                    2));
    p.append(with_wait(dma_copy(hbm(128, 512, num::fp32(), (1 << 24) + off * 256),
                                sbuf(128, 512, num::fp32(), 65536 + off * 2), Engine::kSync, 3),
                       2, i + 1));
  }
  return p;
}

struct Traced {
  profile::Trace trace;
  TimingResult result;
};

Traced traced(const isa::Program& p) {
  Traced t;
  TimingOptions o;
  o.trace = &t.trace;
  t.result = run_timing(chip("trn2"), p, o);
  EXPECT_TRUE(t.result.ok()) << t.result.faults.to_string();
  return t;
}

const std::string& label_name(const profile::Trace& t, uint64_t span) {
  return t.labels()[t.spans()[span].label].name;
}

TEST(TimingTraceExtras, TracingChangesNoTime) {
  const Traced t = traced(pipeline());
  const TimingResult plain = run_timing(chip("trn2"), pipeline(), {});
  EXPECT_EQ(t.result.total, plain.total);
  EXPECT_EQ(t.result.summary(), plain.summary());
}

TEST(TimingTraceExtras, FlowsFollowSemaphoresAndTransfers) {
  const Traced t = traced(pipeline());
  const auto& tr = t.trace;
  ASSERT_FALSE(tr.flows().empty());
  std::map<std::pair<std::string, std::string>, int> kinds;  // (from, to) track names
  for (const profile::Flow& f : tr.flows()) {
    ASSERT_LT(f.from, tr.spans().size());
    ASSERT_LT(f.to, tr.spans().size());
    // Nothing depends on what starts after it.
    EXPECT_LE(tr.spans()[f.from].start, tr.spans()[f.to].start);
    ++kinds[{tr.tracks()[tr.spans()[f.from].track].name, tr.tracks()[tr.spans()[f.to].track].name}];
  }
  // Each matmul waits on the load's transfer: a flow from a DMA piece to TensorE.
  int piece_to_pe = 0, trigger_to_piece = 0, pe_to_act = 0, act_to_sp = 0;
  for (const auto& [k, n] : kinds) {
    const bool from_dma = k.first.rfind("dma", 0) == 0, to_dma = k.second.rfind("dma", 0) == 0;
    if (from_dma && k.second == "pe") piece_to_pe += n;
    if (!from_dma && to_dma) trigger_to_piece += n;
    if (k.first == "pe" && k.second == "act") pe_to_act += n;
    if (k.first == "act" && k.second == "sp") act_to_sp += n;
  }
  EXPECT_EQ(piece_to_pe, 2);
  EXPECT_EQ(pe_to_act, 2);
  EXPECT_EQ(act_to_sp, 2);
  EXPECT_EQ(trigger_to_piece, static_cast<int>(t.result.dma.pieces));
  for (const profile::Flow& f : tr.flows())
    if (tr.tracks()[tr.spans()[f.to].track].name == "pe")
      EXPECT_EQ(label_name(tr, f.from), "dma_copy");
}

TEST(TimingTraceExtras, CountersOfMemoryQueuesAndBandwidth) {
  const Traced t = traced(pipeline());
  const auto& tr = t.trace;
  std::map<std::string, std::vector<profile::CounterSample>> by;
  for (const profile::CounterSample& c : tr.counter_samples())
    by[tr.counters()[c.counter].name].push_back(c);
  for (const char* name : {"sbuf bytes", "psum bytes", "dma q0 depth", "hbm GB/s"})
    ASSERT_FALSE(by[name].empty()) << name;
  for (const auto& [name, v] : by) {
    EXPECT_EQ(tr.counters()[v[0].counter].process, "core0");
    for (const auto& c : v) EXPECT_GE(c.value, 0) << name;
    EXPECT_EQ(v.back().value, 0) << name << ": everything is freed, done and idle at the end";
  }
  // A [128, 512] bf16 tile is 128 KiB, the fp32 result 256 KiB, and so is the PSUM tile (the
  // second matmul may fill it again before the first evacuation has read it all).
  double sbuf_peak = 0, psum_peak = 0, depth_peak = 0, gbps_peak = 0;
  for (const auto& c : by["sbuf bytes"]) sbuf_peak = std::max(sbuf_peak, c.value);
  for (const auto& c : by["psum bytes"]) psum_peak = std::max(psum_peak, c.value);
  for (const auto& c : by["dma q0 depth"]) depth_peak = std::max(depth_peak, c.value);
  for (const auto& c : by["hbm GB/s"]) gbps_peak = std::max(gbps_peak, c.value);
  EXPECT_GE(sbuf_peak, 128.0 * 1024);
  EXPECT_LE(sbuf_peak, 2 * (128.0 + 256.0) * 1024);
  EXPECT_GE(psum_peak, 256.0 * 1024);
  EXPECT_LE(psum_peak, 512.0 * 1024);
  EXPECT_GE(depth_peak, 1);
  EXPECT_GT(gbps_peak, 0);
}

TEST(TimingTraceExtras, PerfettoTraceOfARunReadsBack) {
  const Traced a = traced(pipeline()), b = traced(pipeline());
  const std::string bytes = profile::perfetto_trace_bytes(a.trace);
  EXPECT_EQ(bytes, profile::perfetto_trace_bytes(b.trace));  // same run, same bytes
  const proto_test::PerfettoFile f = proto_test::read_perfetto(bytes);
  EXPECT_TRUE(f.first_clears_state && f.one_sequence && f.interned_before_use);
  size_t begins = 0, ends = 0, flows = 0;
  for (const auto& e : f.events) {
    begins += e.type == 1;
    ends += e.type == 2;
    flows += e.flows.size();
  }
  EXPECT_EQ(begins, ends);
  EXPECT_GT(flows, 0u);
  // The load's pieces are the same on every DMA engine: one track for them all.
  EXPECT_NE(f.track_named("dma0-15.q0"), nullptr);
}

}  // namespace
}  // namespace trnsim::core
