// `trnsim model` end to end through cli::run: the model list, the per-op table, --json,
// --trace and the errors a user sees.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace trnsim::cli {
namespace {

CliResult run_model(std::vector<std::string> args) {
  args.insert(args.begin(), "model");
  return run_cli(args);
}

TEST(ModelCli, ListsBuiltInModels) {
  const CliResult r = run_model({"--list"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "llama-3.1-8b")) << r.out;
  EXPECT_TRUE(has(r.out, "tiny-llama")) << r.out;
  const CliResult j = run_model({"--list", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const auto names = nlohmann::json::parse(j.out);
  ASSERT_TRUE(names.is_array());
  EXPECT_NE(std::find(names.begin(), names.end(), "llama-3.1-8b"), names.end());
}

TEST(ModelCli, PrintsTheTable) {
  const CliResult r = run_model({"tiny-llama", "--tp", "1", "--seq", "64"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"tiny-llama on trn2 (tp 1)", "latency", "MFU", "embed_tokens",
                           "layers.*.self_attn.attn", "lm_head", "fusions:"})
    EXPECT_TRUE(has(r.out, part)) << part << "\n" << r.out;
}

// Kernels are timed beside the kernel before them by default (docs/models.md "Kernels timed
// together"); --kernels-apart times each alone, which is slower and hides nothing.
TEST(ModelCli, KernelsApart) {
  const std::vector<std::string> args{"bert-large", "--chip",   "trn1", "--tp",
                                      "1",          "--layers", "1",    "--json"};
  const CliResult together = run_model(args);
  ASSERT_EQ(together.code, 0) << together.err;
  std::vector<std::string> apart_args = args;
  apart_args.push_back("--kernels-apart");
  const CliResult apart = run_model(apart_args);
  ASSERT_EQ(apart.code, 0) << apart.err;
  const auto t = nlohmann::json::parse(together.out), a = nlohmann::json::parse(apart.out);
  EXPECT_GT(t.at("overlap_us").get<double>(), 0);
  EXPECT_EQ(a.at("overlap_us").get<double>(), 0);
  EXPECT_LT(t.at("latency_us").get<double>(), a.at("latency_us").get<double>());
}

TEST(ModelCli, Json) {
  const CliResult r = run_model({"tiny-llama", "--tp", "1", "--seq", "64", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"latency_us", "mfu", "ops", "fits", "manifest"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_GT(j.at("latency_us").get<double>(), 0);
  EXPECT_TRUE(j.at("fits").get<bool>());
  EXPECT_FALSE(j.at("ops").empty());
  EXPECT_EQ(j.at("model"), "tiny-llama");
  EXPECT_EQ(j.at("seq"), 64);
}

TEST(ModelCli, TraceMustBeJson) {
  const CliResult r = run_model({"tiny-llama", "--tp", "1", "--seq", "64", "--trace", "x.ntff"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.err, ".json")) << r.err;
  const auto path = std::filesystem::temp_directory_path() /
                    ("trnsim_model_cli_trace_" + std::to_string(::getpid()) + ".json");
  const CliResult t =
      run_model({"tiny-llama", "--tp", "1", "--seq", "64", "--trace", path.string()});
  ASSERT_EQ(t.code, 0) << t.err;
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  EXPECT_GT(trace.at("traceEvents").size(), 12u);  // metadata + one slice per kernel
  std::filesystem::remove(path);
}

TEST(ModelCli, UnknownModelListsBuiltIns) {
  const CliResult r = run_model({"no-such-model"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.err, "no-such-model")) << r.err;
  EXPECT_TRUE(has(r.err, "llama-3.1-8b")) << r.err;
}

TEST(ModelCli, TpThatDoesNotDivideTheHeads) {
  const CliResult r = run_model({"tiny-llama", "--tp", "3"});  // 4 heads
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.err, "tp")) << r.err;
}

TEST(ServeCli, JsonHasTheKeysScriptsUse) {
  const CliResult r = run_cli({"serve", "--model", "tiny-llama", "--tp", "2", "--input-tokens",
                               "100", "--output-tokens", "20", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"ttft_ms", "tpot_ms", "output_tokens_per_s", "prefill_bucket", "manifest"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_GT(j["ttft_ms"].get<double>(), 0);
  const CliResult t = run_cli({"serve", "--model", "tiny-llama", "--tp", "2"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(has(t.out, "TTFT")) << t.out;
  EXPECT_TRUE(has(t.out, "last decode step")) << t.out;
  const CliResult bad = run_cli({"serve", "--model", "tiny-llama", "--tp", "3"});
  EXPECT_NE(bad.code, 0);
  EXPECT_TRUE(has(bad.err, "tp")) << bad.err;
}

// Under a load the same keys are the requests' means, beside their percentiles.
TEST(ServeCli, UnderALoad) {
  const CliResult r =
      run_cli({"serve", "--model", "tiny-llama", "--tp", "2", "--input-tokens", "100",
               "--output-tokens", "20", "--concurrency", "2", "--requests", "4", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"ttft_ms", "tpot_ms", "output_tokens_per_s", "percentiles", "per_request",
                          "compiled_batch", "manifest"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["per_request"].size(), 4u);
  const CliResult t = run_cli({"serve", "--model", "tiny-llama", "--tp", "2", "--rate", "100",
                               "--requests", "5", "--compiled-batch", "4"});
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(has(t.out, "Poisson")) << t.out;
  EXPECT_TRUE(has(t.out, "p99")) << t.out;
  const CliResult bad = run_cli({"serve", "--model", "tiny-llama", "--kv-buckets", "linear"});
  EXPECT_NE(bad.code, 0);
  EXPECT_TRUE(has(bad.err, "kv-buckets")) << bad.err;
  const CliResult spread = run_cli({"serve", "--model", "tiny-llama", "--input-tokens", "10",
                                    "--input-spread", "10", "--concurrency", "1"});
  EXPECT_NE(spread.code, 0);
  EXPECT_TRUE(has(spread.err, "input-spread")) << spread.err;
}

}  // namespace
}  // namespace trnsim::cli
