// `trnsim plan` end to end through cli::run: the ranked table, --json with the keys scripts
// read, the options narrowing the search, and the errors a user sees.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace trnsim::cli {
namespace {

CliResult run_plan(std::vector<std::string> args) {
  std::vector<std::string> full{"plan",  "-m",  "tiny-llama",     "--system", "trn1.32xlarge",
                                "--seq", "256", "--global-batch", "64",       "--no-search"};
  full.insert(full.end(), args.begin(), args.end());
  return run_cli(full);
}

TEST(PlanCli, PrintsTheRankedPlansWithTheirBound) {
  const CliResult r = run_plan({"--micro-batch", "1", "--recompute", "none", "--top", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  // TP 1, 2, 4 x PP 1, 2 x ZeRO 0, 1 (the default stages)
  EXPECT_TRUE(has(r.out,
                  "tiny-llama on 1 x trn1.32xlarge (16 chips): 12 plans, 0 illegal, 0 "
                  "do not fit, 12 timed"))
      << r.out;
  EXPECT_TRUE(has(r.out, "rank  LNC   TP   PP    DP")) << r.out;
  EXPECT_TRUE(has(r.out, "% of the step)")) << r.out;
}

TEST(PlanCli, JsonHasTheCountsAndTheBestPlansWithTrainsKeys) {
  const CliResult r = run_plan({"--tp", "2", "4", "--pp", "1", "--micro-batch", "1", "--zero", "1",
                                "--recompute", "none", "full", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["enumerated"], 4);
  EXPECT_EQ(j["timed"], 4);
  ASSERT_EQ(j["best"].size(), 4u);
  double last = 0;
  for (const auto& p : j["best"]) {
    for (const char* k : {"step_time_s", "sequences_per_s", "tokens_per_s", "mfu",
                          "memory_per_chip_bytes", "bound"})
      EXPECT_TRUE(p.contains(k)) << k;
    EXPECT_EQ(p["pp"], 1);
    EXPECT_GE(p["step_time_s"].get<double>(), last);
    last = p["step_time_s"].get<double>();
  }
  EXPECT_TRUE(j.contains("manifest"));
}

TEST(PlanCli, ErrorsNameTheOption) {
  CliResult r = run_plan({"--recompute", "partial"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.err, "--recompute")) << r.err;
  r = run_cli({"plan", "--system", "trn1.32xlarge"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.err, "--model")) << r.err;
  r = run_plan({"--lnc", "3"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.err, "lnc")) << r.err;
}

}  // namespace
}  // namespace trnsim::cli
