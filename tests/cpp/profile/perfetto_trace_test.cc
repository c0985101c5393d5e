// The Perfetto protobuf writer, read back with a schema-less wire-format walker
// (proto_decode.h): packet structure, track descriptors, interned names, balanced and nested
// slices, debug annotations, counters, flows, merged tracks, windows, determinism.
#include "profile/perfetto_trace.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "profile/chrome_trace.h"
#include "profile/proto_decode.h"
#include "profile/protobuf_writer.h"

namespace trnsim::profile {
namespace {

using proto_test::PerfettoEvent;
using proto_test::PerfettoFile;
using proto_test::PerfettoTrack;
using proto_test::read_perfetto;

Picoseconds ps(int64_t v) { return Picoseconds(v); }

// Two engines and two DMA queues that carry identical pieces, flows and two counters.
Trace sample() {
  Trace t;
  const uint32_t pe = t.add_track("core0", "pe");
  const uint32_t act = t.add_track("core0", "act");
  const uint32_t q0 = t.add_track("core0 dma", "dma0.q0");
  const uint32_t q1 = t.add_track("core0 dma", "dma1.q0");
  const uint32_t mm =
      t.add_label({"matmul 'mm'", "pe", {{"operands", "dst=psum[0:128]"}, {"index", "7"}}});
  const uint32_t ld = t.add_label({"dma_copy", "act", {{"index", "0"}, {"waits", "s1>=2"}}});
  const uint64_t trig = t.record(act, ps(0), ps(600'000), ld);
  const uint64_t p0 = t.record(q0, ps(700'000), ps(1'500'500), ld);
  const uint64_t p1 = t.record(q1, ps(700'000), ps(1'500'500), ld);
  const uint64_t m = t.record(pe, ps(1'600'000), ps(2'000'000), mm);
  t.record(pe, ps(2'000'000), ps(2'400'999), mm);
  t.add_flow(trig, p0);
  t.add_flow(trig, p1);
  t.add_flow(p1, m);  // the transfer's completion released the matmul
  const uint32_t sb = t.add_counter("core0", "sbuf bytes", "bytes");
  const uint32_t bw = t.add_counter("core0", "hbm GB/s", "GB/s");
  t.record_counter(sb, ps(700'000), 32768);
  t.record_counter(sb, ps(2'400'999), 0);
  t.record_counter(bw, ps(700'000), 123.5);
  t.record_counter(bw, ps(1'500'500), 0);
  return t;
}

std::vector<const PerfettoEvent*> on_track(const PerfettoFile& f, const std::string& name) {
  std::vector<const PerfettoEvent*> v;
  const PerfettoTrack* t = f.track_named(name);
  if (t == nullptr) return v;
  for (const auto& e : f.events)
    if (e.track == t->uuid) v.push_back(&e);
  return v;
}

// Begin / end pairs per track, properly nested, in non-decreasing time.
void expect_balanced(const PerfettoFile& f) {
  std::map<uint64_t, std::vector<uint64_t>> open;  // track -> begin times
  uint64_t last = 0;
  for (const auto& e : f.events) {
    EXPECT_GE(e.ts, last) << "events out of time order";
    last = e.ts;
    if (e.type == 1) open[e.track].push_back(e.ts);
    if (e.type == 2) {
      ASSERT_FALSE(open[e.track].empty()) << "an end without a begin on track " << e.track;
      EXPECT_LE(open[e.track].back(), e.ts);
      open[e.track].pop_back();
    }
  }
  for (const auto& [track, v] : open) EXPECT_TRUE(v.empty()) << "unclosed slice on " << track;
}

TEST(ProtobufWriter, WireEncoding) {
  ProtoBuf b;
  b.varint(1);
  b.varint(300);
  EXPECT_EQ(b.bytes(), std::string("\x01\xAC\x02", 3));
  b.clear();
  b.int_field(1, -1);  // int64: ten bytes of two's complement
  EXPECT_EQ(b.size(), 11u);
  b.clear();
  b.fixed64_field(47, 0x0102030405060708ull);
  EXPECT_EQ(b.bytes(), std::string("\xF9\x02\x08\x07\x06\x05\x04\x03\x02\x01", 10));
  b.clear();
  b.bytes_field(2, "hi");
  EXPECT_EQ(b.bytes(), std::string("\x12\x02hi", 4));
  const auto fields = proto_test::proto_fields(b.bytes());
  ASSERT_EQ(fields.size(), 1u);
  EXPECT_EQ(fields[0].bytes, "hi");
}

TEST(PerfettoTrace, PacketsDescriptorsAndInternedNames) {
  const std::string bytes = perfetto_trace_bytes(sample());
  const PerfettoFile f = read_perfetto(bytes);
  EXPECT_TRUE(f.first_clears_state);
  EXPECT_TRUE(f.one_sequence);
  EXPECT_TRUE(f.interned_before_use);
  // A process per Track::process, a thread per track (the DMA pair merged), two counters.
  std::map<std::string, PerfettoTrack::Kind> kinds;
  for (const auto& t : f.tracks) kinds[t.name] = t.kind;
  EXPECT_EQ(kinds.at("core0"), PerfettoTrack::kProcess);
  EXPECT_EQ(kinds.at("core0 dma"), PerfettoTrack::kProcess);
  EXPECT_EQ(kinds.at("pe"), PerfettoTrack::kThread);
  EXPECT_EQ(kinds.at("act"), PerfettoTrack::kThread);
  EXPECT_EQ(kinds.at("dma0-1.q0"), PerfettoTrack::kThread);
  EXPECT_EQ(kinds.at("sbuf bytes"), PerfettoTrack::kCounter);
  EXPECT_EQ(kinds.at("hbm GB/s"), PerfettoTrack::kCounter);
  EXPECT_EQ(f.tracks.size(), 7u);
  // Threads name their process by pid.
  const PerfettoTrack* core = f.track_named("core0");
  EXPECT_EQ(f.track_named("pe")->pid, core->pid);
  EXPECT_EQ(f.track_named("sbuf bytes")->parent, core->uuid);
  // Interned names and categories come back; args as debug annotations, integers as integers.
  const auto pe = on_track(f, "pe");
  ASSERT_EQ(pe.size(), 4u);
  EXPECT_EQ(pe[0]->name, "matmul 'mm'");
  EXPECT_EQ(pe[0]->category, "pe");
  EXPECT_EQ(pe[0]->args.at("operands"), "dst=psum[0:128]");
  EXPECT_EQ(pe[0]->args.at("index"), "7");
  EXPECT_EQ(pe[2]->name, "matmul 'mm'");  // the second use: the same iid, no new entry
  expect_balanced(f);
}

TEST(PerfettoTrace, TimesAreNanosecondsRoundedDown) {
  const PerfettoFile f = read_perfetto(perfetto_trace_bytes(sample()));
  const auto pe = on_track(f, "pe");
  ASSERT_EQ(pe.size(), 4u);
  EXPECT_EQ(pe[0]->ts, 1600u);
  EXPECT_EQ(pe[1]->ts, 2000u);  // ends at 2000 ns, the next begins there
  EXPECT_EQ(pe[1]->type, 2u);
  EXPECT_EQ(pe[3]->ts, 2400u);  // 2'400'999 ps
  const auto dma = on_track(f, "dma0-1.q0");
  ASSERT_EQ(dma.size(), 2u);
  EXPECT_EQ(dma[1]->ts, 1500u);
}

TEST(PerfettoTrace, CountersAndFlows) {
  const PerfettoFile f = read_perfetto(perfetto_trace_bytes(sample()));
  const auto sb = on_track(f, "sbuf bytes");
  ASSERT_EQ(sb.size(), 2u);
  EXPECT_EQ(sb[0]->type, 4u);
  EXPECT_EQ(sb[0]->ts, 700u);
  EXPECT_EQ(sb[0]->counter, 32768.0);
  EXPECT_EQ(sb[1]->counter, 0.0);
  const auto bw = on_track(f, "hbm GB/s");
  ASSERT_EQ(bw.size(), 2u);
  EXPECT_EQ(bw[0]->counter, 123.5);
  // The trigger -> piece flows of the merged pair are one flow; the piece -> matmul one.
  const auto act = on_track(f, "act");
  const auto dma = on_track(f, "dma0-1.q0");
  const auto pe = on_track(f, "pe");
  ASSERT_EQ(act[0]->flows.size(), 1u);
  ASSERT_EQ(dma[0]->terminating_flows.size(), 1u);
  EXPECT_EQ(act[0]->flows[0], dma[0]->terminating_flows[0]);
  ASSERT_EQ(dma[0]->flows.size(), 1u);
  ASSERT_EQ(pe[0]->terminating_flows.size(), 1u);
  EXPECT_EQ(dma[0]->flows[0], pe[0]->terminating_flows[0]);
  EXPECT_NE(act[0]->flows[0], dma[0]->flows[0]);
}

TEST(PerfettoTrace, IdenticalTracksMergeOnlyWhenAsked) {
  PerfettoOptions keep;
  keep.merge_identical_tracks = false;
  const PerfettoFile f = read_perfetto(perfetto_trace_bytes(sample(), keep));
  EXPECT_EQ(on_track(f, "dma0.q0").size(), 2u);
  EXPECT_EQ(on_track(f, "dma1.q0").size(), 2u);
  EXPECT_EQ(f.track_named("dma0-1.q0"), nullptr);
  // Two flows from the trigger now, each ending on its own piece.
  EXPECT_EQ(on_track(f, "act")[0]->flows.size(), 2u);
  expect_balanced(f);
  // Tracks that differ are never merged, and names without a number range say how many.
  Trace t;
  const uint32_t a = t.add_track("p", "left"), b = t.add_track("p", "right");
  const uint32_t c = t.add_track("p", "other");
  const uint32_t l = t.add_label({"x", "c", {}});
  for (uint32_t k : {a, b}) t.record(k, ps(0), ps(5000), l);
  t.record(c, ps(0), ps(6000), l);
  const PerfettoFile g = read_perfetto(perfetto_trace_bytes(t));
  EXPECT_NE(g.track_named("left (+1 identical)"), nullptr);
  EXPECT_NE(g.track_named("other"), nullptr);
}

TEST(PerfettoTrace, PartlyOverlappingSpansGoToAnotherLane) {
  Trace t;
  const uint32_t pe = t.add_track("core0", "pe");
  const uint32_t l = t.add_label({"op", "pe", {}});
  t.record(pe, ps(0), ps(213'334), l);
  t.record(pe, ps(100'000), ps(300'001), l);  // overlaps the first without nesting in it
  t.record(pe, ps(120'000), ps(200'000), l);  // nests in the first
  t.record(pe, ps(300'001), ps(300'001), l);  // zero length
  const PerfettoFile f = read_perfetto(perfetto_trace_bytes(t));
  expect_balanced(f);
  EXPECT_EQ(on_track(f, "pe").size(), 6u);
  EXPECT_EQ(on_track(f, "pe (2)").size(), 2u);
}

TEST(PerfettoTrace, SameTraceSameBytes) {
  EXPECT_EQ(perfetto_trace_bytes(sample()), perfetto_trace_bytes(sample()));
  // An empty trace is one packet that opens the sequence.
  const PerfettoFile f = read_perfetto(perfetto_trace_bytes(Trace{}));
  EXPECT_EQ(f.packets, 1u);
  EXPECT_TRUE(f.first_clears_state);
}

TEST(PerfettoTrace, FormatByFileName) {
  EXPECT_EQ(trace_format_for("t.json"), TraceFormat::kChromeJson);
  EXPECT_EQ(trace_format_for("t.perfetto-trace"), TraceFormat::kPerfetto);
  EXPECT_EQ(trace_format_for("dir/t.pftrace"), TraceFormat::kPerfetto);
  EXPECT_EQ(trace_format_for("t.ntff"), TraceFormat::kUnknown);
  EXPECT_EQ(trace_format_for("json"), TraceFormat::kUnknown);
}

TEST(ProfileTraceWindow, KeepsOverlappingSpansFlowsAndCounterValues) {
  const Trace all = sample();
  const Trace w = window(all, ps(1'000'000), ps(1'700'000));
  ASSERT_EQ(w.spans().size(), 3u);  // the two pieces and the first matmul
  for (const Span& s : w.spans()) EXPECT_TRUE(s.start < ps(1'700'000) && s.end > ps(1'000'000));
  ASSERT_EQ(w.flows().size(), 1u);  // piece -> matmul; the trigger is outside
  EXPECT_EQ(w.tracks().size(), all.tracks().size());
  // Each counter starts the window at its value then.
  std::map<uint32_t, std::vector<CounterSample>> by;
  for (const CounterSample& c : w.counter_samples()) by[c.counter].push_back(c);
  ASSERT_EQ(by[0].size(), 1u);
  EXPECT_EQ(by[0][0].t, ps(1'000'000));
  EXPECT_EQ(by[0][0].value, 32768);
  ASSERT_EQ(by[1].size(), 2u);
  EXPECT_EQ(by[1][0].value, 123.5);
  EXPECT_EQ(by[1][1].t, ps(1'500'500));
  // The window's Perfetto trace reads back whole.
  const PerfettoFile f = read_perfetto(perfetto_trace_bytes(w));
  expect_balanced(f);
  EXPECT_TRUE(f.interned_before_use);
}

TEST(ProfileTrace, ChromeJsonHasCounters) {
  const std::string j = chrome_trace_json(sample());
  EXPECT_NE(j.find("\"ph\":\"C\",\"pid\":1,\"tid\":0,\"name\":\"sbuf bytes\""), std::string::npos)
      << j;
  EXPECT_NE(j.find("{\"GB/s\":123.5}"), std::string::npos);
}

TEST(ProfileTrace, AppendShiftsAndRenames) {
  Trace out;
  const Trace one = sample();
  append_trace(out, one, ps(0), [](const std::string& p) { return p; });
  append_trace(out, one, ps(10'000'000), [](const std::string& p) { return "x " + p; });
  EXPECT_EQ(out.spans().size(), 2 * one.spans().size());
  EXPECT_EQ(out.flows().size(), 2 * one.flows().size());
  EXPECT_EQ(out.flows()[3].from, one.flows()[0].from + one.spans().size());
  EXPECT_EQ(out.counters()[2].process, "x core0");
  EXPECT_EQ(out.counter_samples().back().t, ps(10'000'000 + 1'500'500));
}

}  // namespace
}  // namespace trnsim::profile
