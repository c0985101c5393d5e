// `trnsim run` end to end through cli::run: example kernels by name, text programs, modes,
// traces, JSON, and the errors a user meets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "cli/cli.h"
#include "cli_test_util.h"
#include "isa/disassembler.h"
#include "kernels/registry.h"

namespace trnsim::cli {
namespace {

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("trnsim_run_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
          "_" + name);
}

TEST(RunCli, KernelOnTwoChipsAsJson) {
  const CliResult r = run_cli(
      {"run", "softmax", "rows=256", "cols=512", "--chip", "trn1,trn2", "--json", "--seed", "7"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["manifest"]["target"], "softmax");
  EXPECT_EQ(j["manifest"]["seed"], 7);
  EXPECT_EQ(j["manifest"]["chips"], (std::vector<std::string>{"trn1", "trn2"}));
  EXPECT_TRUE(has(j["manifest"]["command"].get<std::string>(), "trnsim run softmax"));
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["mode"], "functional+timing");
    EXPECT_GT(run["result"]["total_ps"].get<int64_t>(), 0);
    EXPECT_TRUE(run["result"]["faults"].empty());
    ASSERT_EQ(run["outputs"].size(), 1u);
    const auto& out = run["outputs"][0];
    EXPECT_EQ(out["elements"], 256 * 512);
    EXPECT_EQ(out["nans"], 0);
    // Softmax rows sum to one: the mean of 512 columns is 1/512.
    EXPECT_NEAR(out["mean"].get<double>(), 1.0 / 512, 1e-5);
    EXPECT_GE(out["min"].get<double>(), 0.0);
  }
  // Different clocks and costs: the generations do not take the same time.
  EXPECT_NE(j["runs"][0]["result"]["total_ps"], j["runs"][1]["result"]["total_ps"]);
}

// The rough edges of issue 18: --version names the commit, --list honours --json, a trace
// name that promises another format is refused, and the run shows where the time went.
TEST(RunCli, VersionListJsonTraceNameAndWaits) {
  const CliResult v = run_cli({"--version"});
  EXPECT_NE(v.out.find("(commit "), std::string::npos) << v.out;
  const CliResult l = run_cli({"run", "--list", "--json"});
  ASSERT_EQ(l.code, 0) << l.err;
  const auto j = nlohmann::json::parse(l.out);
  ASSERT_EQ(j.at("kernels").size(), examples::kernel_registry().size());
  EXPECT_EQ(j["kernels"][0].at("name"), std::string(examples::kernel_registry()[0].name));
  EXPECT_FALSE(j["kernels"][0].at("params").empty());
  const CliResult t = run_cli({"run", "softmax", "--mode", "timing", "--trace", "out.ntff"});
  EXPECT_NE(t.code, 0);
  EXPECT_NE(t.err.find(".json"), std::string::npos) << t.err;
  const CliResult r = run_cli({"run", "softmax", "128", "512", "--mode", "timing", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto run = nlohmann::json::parse(r.out).at("runs").at(0);
  EXPECT_EQ(nlohmann::json::parse(r.out).at("manifest").at("commit"), std::string(commit()));
  const auto& figures = run.at("result");
  ASSERT_TRUE(figures.contains("bound")) << run.dump().substr(0, 400);
  EXPECT_TRUE(figures.at("engines").at("dve").contains("wait_semaphore_ns"));
}

TEST(RunCli, SameSeedSameBits) {
  const CliResult a = run_cli({"run", "layernorm", "256", "256", "--chip", "trn3", "--json"});
  const CliResult b = run_cli({"run", "layernorm", "256", "256", "--chip", "trn3", "--json"});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(RunCli, TextSummaryHasTheFigures) {
  const CliResult r = run_cli({"run", "matmul_tiled", "128", "256", "512", "--chip", "trn2"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"== trn2 (functional+timing)", "total time:", "TensorE:", "HBM read",
                           "high-water per partition", "multiply_moving", "outputs:"})
    EXPECT_TRUE(has(r.out, part)) << part << "\n" << r.out;
}

TEST(RunCli, TimingOnlyHasNoOutputsAndFunctionalHasNoTime) {
  const auto timing = nlohmann::json::parse(
      run_cli({"run", "rmsnorm", "--chip", "trn1", "--mode", "timing", "--json"}).out);
  EXPECT_TRUE(timing["runs"][0]["outputs"].empty());
  EXPECT_GT(timing["runs"][0]["result"]["total_ps"].get<int64_t>(), 0);
  const auto func = nlohmann::json::parse(
      run_cli({"run", "rmsnorm", "256", "--chip", "trn1", "--mode", "functional", "--json"}).out);
  EXPECT_EQ(func["runs"][0]["result"]["total_ps"], 0);
  EXPECT_EQ(func["runs"][0]["outputs"].size(), 1u);
}

TEST(RunCli, TraceFilePerChipOpensAsChromeJson) {
  const std::filesystem::path base = temp_file("trace.json");
  const CliResult r =
      run_cli({"run", "softmax", "128", "256", "--chip", "trn1,trn3", "--trace", base.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* chip : {"trn1", "trn3"}) {
    const std::filesystem::path p =
        base.parent_path() / (base.stem().string() + "-" + chip + ".json");
    std::ifstream f(p);
    ASSERT_TRUE(f.good()) << p;
    const auto j = nlohmann::json::parse(f);
    ASSERT_TRUE(j.contains("traceEvents"));
    EXPECT_GT(j["traceEvents"].size(), 10u);
    std::filesystem::remove(p);
  }
}

TEST(RunCli, ProgramFileRunsLikeTheKernelItCameFrom) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  const isa::Program prog = examples::build_kernel("rmsnorm", chip, {256, 512});
  const std::filesystem::path file = temp_file("rmsnorm.s");
  std::ofstream(file) << isa::disassemble(prog);
  const auto from_file =
      nlohmann::json::parse(run_cli({"run", file.string(), "--chip", "trn2", "--json"}).out);
  const auto from_name = nlohmann::json::parse(
      run_cli({"run", "rmsnorm", "256", "512", "--chip", "trn2", "--json"}).out);
  std::filesystem::remove(file);
  EXPECT_EQ(from_file["runs"][0]["result"], from_name["runs"][0]["result"]);
  EXPECT_EQ(from_file["runs"][0]["outputs"], from_name["runs"][0]["outputs"]);
}

TEST(RunCli, BadInputNamesWhatIsWrong) {
  CliResult r = run_cli({"run", "no_such_kernel"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "no such kernel")) << r.err;
  EXPECT_TRUE(has(r.err, "matmul_tiled")) << r.err;  // lists the known ones

  r = run_cli({"run", "softmax", "rows=12x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "expected an integer")) << r.err;

  r = run_cli({"run", "softmax", "width=4"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "rows, cols")) << r.err;

  r = run_cli({"run", "softmax", "--mode", "fast"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--mode")) << r.err;

  r = run_cli({"run", "softmax", "--mode", "functional", "--trace", "x.json"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "no time")) << r.err;

  r = run_cli({"run", "/no/such/dir/prog.s"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "/no/such/dir/prog.s")) << r.err;

  const std::filesystem::path bad = temp_file("bad.s");
  std::ofstream(bad) << "this is not an instruction\n";
  r = run_cli({"run", bad.string()});
  std::filesystem::remove(bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, bad.filename().string())) << r.err;
}

TEST(RunCli, ListNamesEveryKernel) {
  const CliResult r = run_cli({"run", "--list"});
  ASSERT_EQ(r.code, 0);
  for (const auto& k : examples::kernel_registry())
    EXPECT_TRUE(has(r.out, std::string(k.name))) << k.name;
}

TEST(RunCli, DefaultJobRunsTheTutorialMatmulOnThreeGenerations) {
  const CliResult r = run_cli({});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"$ trnsim run matmul_fully_optimized", "trn1", "trn2", "trn3",
                           "TensorE utilisation (%)", "== trn3 (functional+timing)"})
    EXPECT_TRUE(has(r.out, part)) << part;
}

}  // namespace
}  // namespace trnsim::cli
