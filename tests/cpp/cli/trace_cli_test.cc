// `trnsim run --trace`: the file name picks Perfetto protobuf or Chrome JSON, other names are
// refused naming both, and --trace-window keeps the part of the run in a time window.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_test_util.h"
#include "profile/proto_decode.h"

namespace trnsim::cli {
namespace {

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("trnsim_trace_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
          "_" + name);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

size_t begins(const proto_test::PerfettoFile& f) {
  size_t n = 0;
  for (const auto& e : f.events) n += e.type == 1;
  return n;
}

TEST(TraceCli, ProtobufOrJsonByName) {
  for (const char* ext : {".perfetto-trace", ".pftrace"}) {
    const auto path = temp_file(std::string("t") + ext);
    const CliResult r =
        run_cli({"run", "softmax", "128", "512", "--mode", "timing", "--trace", path.string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(has(r.out, "trace: " + path.string())) << r.out;
    const proto_test::PerfettoFile f = proto_test::read_perfetto(slurp(path));
    EXPECT_TRUE(f.first_clears_state);
    EXPECT_GT(begins(f), 3u);
    EXPECT_NE(f.track_named("sbuf bytes"), nullptr);
    std::filesystem::remove(path);
  }
  const auto json = temp_file("t.json");
  ASSERT_EQ(
      run_cli({"run", "softmax", "128", "512", "--mode", "timing", "--trace", json.string()}).code,
      0);
  EXPECT_TRUE(nlohmann::json::parse(slurp(json)).contains("traceEvents"));
  std::filesystem::remove(json);
}

TEST(TraceCli, OtherNamesAndBadWindowsAreRefused) {
  const CliResult ntff = run_cli({"run", "softmax", "--mode", "timing", "--trace", "out.ntff"});
  EXPECT_EQ(ntff.code, 2);
  EXPECT_TRUE(has(ntff.err, ".json") && has(ntff.err, ".perfetto-trace") &&
              has(ntff.err, ".pftrace"))
      << ntff.err;
  for (const char* w : {"5", "1:2:3", "2us:1us", "a:b", "-1:5"}) {
    const CliResult r = run_cli({"run", "softmax", "128", "512", "--mode", "timing", "--trace",
                                 temp_file("w.pftrace").string(), "--trace-window", w});
    EXPECT_EQ(r.code, 2) << w;
    EXPECT_TRUE(has(r.err, "--trace-window")) << r.err;
  }
  const CliResult alone = run_cli({"run", "softmax", "--trace-window", "0:1000"});
  EXPECT_EQ(alone.code, 2);
  EXPECT_TRUE(has(alone.err, "--trace")) << alone.err;
}

TEST(TraceCli, WindowKeepsThePartOfTheRunAsked) {
  const auto whole = temp_file("whole.pftrace"), part = temp_file("part.pftrace");
  ASSERT_EQ(
      run_cli({"run", "softmax", "256", "512", "--mode", "timing", "--trace", whole.string()}).code,
      0);
  const CliResult r = run_cli({"run", "softmax", "256", "512", "--mode", "timing", "--trace",
                               part.string(), "--trace-window", "1000:2us"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto all = proto_test::read_perfetto(slurp(whole)),
             some = proto_test::read_perfetto(slurp(part));
  EXPECT_LT(begins(some), begins(all));
  EXPECT_GT(begins(some), 0u);
  for (const auto& e : some.events)
    if (e.type == 1) EXPECT_LT(e.ts, 2000u);  // begins before the window's end
  std::filesystem::remove(whole);
  std::filesystem::remove(part);
}

}  // namespace
}  // namespace trnsim::cli
