// `trnsim collective` end to end through cli::run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace trnsim::cli {
namespace {

using Out = CliResult;

Out run_collective(std::vector<std::string> args) {
  args.insert(args.begin(), "collective");
  return run_cli(args);
}

TEST(CollectiveCli, PrintsAnNccomLikeSweep) {
  const Out r = run_collective(
      {"all-reduce", "--system", "trn1.32xlarge", "--ranks", "2", "--sizes", "1KiB:1GiB:4"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"size(B)", "count", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                           "1073741824", "268435456", "fp32", "58.0"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
}

// --groups: K communicators at once; the row is the slowest group's, --json lists them all.
TEST(CollectiveCli, ConcurrentGroups) {
  const Out r = run_collective({"all-reduce", "--system", "trn2.48xlarge", "--servers", "2",
                                "--rank-unit", "chip", "--ranks", "32", "--sizes", "16MiB",
                                "--groups", "16", "--group-layout", "strided", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("groups").get<int>(), 16);
  const auto& row = j.at("rows").at(0);
  ASSERT_EQ(row.at("groups").size(), 16u);
  double slowest = 0;
  for (const auto& g : row.at("groups")) slowest = std::max(slowest, g.at("time_us").get<double>());
  EXPECT_EQ(row.at("time_us").get<double>(), slowest);
  EXPECT_EQ(row.at("groups").at(0).at("size_bytes").get<int64_t>(), 16 << 20);
  const Out text = run_collective({"all-reduce", "--system", "trn2.48xlarge", "--rank-unit", "chip",
                                   "--ranks", "16", "--sizes", "1MiB", "--groups", "4"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("4 contiguous groups of 4 ranks"), std::string::npos) << text.out;
  EXPECT_NE(run_collective({"all-reduce", "--ranks", "4", "--groups", "3"}).code, 0);
  const Out bad =
      run_collective({"all-reduce", "--ranks", "4", "--groups", "2", "--group-layout", "diagonal"});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("--group-layout"), std::string::npos) << bad.err;
}

TEST(CollectiveCli, EveryListedSystemSweeps) {
  for (const char* sys : {"trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2-ultraserver",
                          "trn3-ultraserver-64", "trn3-ultraserver-144", "trn4-ultraserver"}) {
    const Out r = run_collective({"all-reduce", "--system", sys, "--rank-unit", "chip", "--ranks",
                                  "16", "--sizes", "8B:1GiB:16"});
    EXPECT_EQ(r.code, 0) << sys << ": " << r.err;
  }
  const Out c = run_collective({"all-reduce", "--system", "trn4-ultracluster", "--rank-unit",
                                "chip", "--ranks", "1024", "--sizes", "1GiB"});
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("hierarchical"), std::string::npos) << c.out;
}

TEST(CollectiveCli, JsonHasBusBandwidthWithTheNccomFactor) {
  const Out r = run_collective(
      {"all-gather", "--system", "trn2.48xlarge", "--ranks", "8", "--sizes", "64MiB", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& row = j["rows"][0];
  EXPECT_NEAR(row["busbw_gib_s"].get<double>(), row["algbw_gib_s"].get<double>() * 7 / 8, 1e-9);
  EXPECT_GT(row["hbm_read_bytes"].get<int64_t>(), 0);
}

TEST(CollectiveCli, ForcesKangaRingAndHierarchicalStages) {
  Out r = run_collective({"all-reduce", "--system", "trn2.48xlarge", "--ranks", "64", "--sizes",
                          "64MiB:1GiB:4", "--algorithm", "kangaring"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("kangaring"), std::string::npos) << r.out;
  r = run_collective({"reduce-scatter", "--system", "trn2.48xlarge", "--servers", "4", "--ranks",
                      "256", "--sizes", "1GiB", "--inter", "rdh", "--intra", "ring"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("hierarchical(ring+rdh)"), std::string::npos) << r.out;
  r = run_collective({"all-gather", "--system", "trn2.48xlarge", "--servers", "3", "--ranks", "192",
                      "--sizes", "1MiB", "--inter", "tree"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tree"), std::string::npos) << r.err;
}

TEST(CollectiveCli, BadInputNamesIt) {
  Out r = run_collective({"all-reduce", "--system", "trn9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("trn9"), std::string::npos);
  r = run_collective({"all-reduce", "--ranks", "3", "--algorithm", "rdh", "--sizes", "1MiB"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("power-of-two"), std::string::npos);
  r = run_collective({"all-reduce", "--sizes", "1XB"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace trnsim::cli
