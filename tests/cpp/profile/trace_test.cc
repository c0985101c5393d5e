// The generic trace recorder and its exports, independent of any simulated component.
#include "profile/trace.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "profile/chrome_trace.h"
#include "profile/summary.h"

namespace trnsim::profile {
namespace {

Trace two_tracks() {
  Trace t;
  const uint32_t a = t.add_track("core0", "pe");
  const uint32_t b = t.add_track("core0 dma", "dma0.q0");
  const uint32_t l = t.add_label({"multiply_moving 'mm'", "pe", {{"operands", "dst=\"psum\""}}});
  const uint32_t m = t.add_label({"dma_copy", "sp", {}});
  t.record(b, Picoseconds(1'300'000), Picoseconds(2'724'696), m);
  t.record(a, Picoseconds(0), Picoseconds(213'334), l);
  t.record(a, Picoseconds(100'000), Picoseconds(300'001), l);  // overlaps the first
  return t;
}

TEST(ProfileTrace, MicrosecondsKeepEveryPicosecond) {
  EXPECT_EQ(ps_to_us_string(Picoseconds(0)), "0.000000");
  EXPECT_EQ(ps_to_us_string(Picoseconds(1)), "0.000001");
  EXPECT_EQ(ps_to_us_string(Picoseconds(2'724'696)), "2.724696");
  EXPECT_EQ(ps_to_us_string(Picoseconds(INT64_MAX)), "9223372036854.775807");
  EXPECT_EQ(ps_to_us_string(Picoseconds(-1'500'000)), "-1.500000");
}

TEST(ProfileTrace, ChromeJsonIsValidAndOrdered) {
  const Trace t = two_tracks();
  const auto j = nlohmann::json::parse(chrome_trace_json(t));
  std::vector<double> starts;
  int processes = 0, threads = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M") {
      processes += e.at("name") == "process_name";
      threads += e.at("name") == "thread_name";
      continue;
    }
    EXPECT_EQ(e.at("ph"), "X");
    starts.push_back(e.at("ts").get<double>());
  }
  EXPECT_EQ(processes, 2);
  EXPECT_EQ(threads, 2);
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_TRUE(std::is_sorted(starts.begin(), starts.end()));
  // Arguments survive escaping.
  bool found = false;
  for (const auto& e : j.at("traceEvents"))
    if (e.value("name", "") == "multiply_moving 'mm'") {
      EXPECT_EQ(e.at("args").at("operands"), "dst=\"psum\"");
      found = true;
    }
  EXPECT_TRUE(found);
  EXPECT_EQ(chrome_trace_json(t), chrome_trace_json(two_tracks()));  // deterministic text
}

TEST(ProfileTrace, SummaryBusyIsTheUnionOfSpans) {
  const auto s = summarize_tracks(two_tracks());
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].spans, 2u);
  EXPECT_EQ(s[0].busy, Picoseconds(300'001));  // [0, 300001), overlaps counted once
  EXPECT_EQ(s[1].busy, Picoseconds(1'424'696));
  const std::string text = text_summary(two_tracks());
  EXPECT_NE(text.find("dma0.q0"), std::string::npos);
  EXPECT_NE(text.find("multiply_moving 'mm'"), std::string::npos);
}

}  // namespace
}  // namespace trnsim::profile
