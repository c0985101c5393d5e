// `trnsim profile` end to end through cli::run: a kernel by name and the same kernel as a text
// program give one profile; its figures agree with `trnsim run`'s; bad input is named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "arch/arch.h"
#include "cli_test_util.h"
#include "isa/disassembler.h"
#include "kernels/registry.h"

namespace trnsim::cli {
namespace {

TEST(ProfileCli, AKernelAndItsProgramFileGiveOneProfile) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  const isa::Program prog = examples::build_kernel("softmax", chip, {256, 512});
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() /
      ("trnsim_profile_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "_softmax.s");
  std::ofstream(file) << isa::disassemble(prog);
  const CliResult by_file = run_cli({"profile", file.string(), "--chip", "trn2", "--json"});
  std::filesystem::remove(file);
  const CliResult by_name = run_cli({"profile", "softmax", "256", "512", "--json"});
  ASSERT_EQ(by_name.code, 0) << by_name.err;
  ASSERT_EQ(by_file.code, 0) << by_file.err;
  auto a = nlohmann::json::parse(by_name.out), b = nlohmann::json::parse(by_file.out);
  a.erase("manifest");
  b.erase("manifest");
  // Instruction names and lines differ between a built kernel and its text; figures do not.
  EXPECT_EQ(a["engines"], b["engines"]);
  EXPECT_EQ(a["roofline"], b["roofline"]);
  EXPECT_EQ(a["critical_path"]["per_engine_ns"], b["critical_path"]["per_engine_ns"]);

  // The same time and waits as `trnsim run --mode timing`.
  const auto run = nlohmann::json::parse(
      run_cli({"run", "softmax", "256", "512", "--mode", "timing", "--json"}).out);
  const auto& result = run["runs"][0]["result"];
  EXPECT_EQ(a["total_ps"], result["total_ps"]);
  for (const char* e : {"pe", "dve", "act", "pool", "sp"}) {
    EXPECT_EQ(a["engines"][e]["busy_ns"], result["engines"][e]["busy_ns"]) << e;
    EXPECT_EQ(a["engines"][e]["wait_semaphore_ns"], result["engines"][e]["wait_semaphore_ns"]);
    EXPECT_EQ(a["engines"][e]["idle_ns"], result["engines"][e]["idle_ns"]) << e;
  }
  EXPECT_EQ(a["bound"]["verdict"], result["bound"]["verdict"]);
  EXPECT_EQ(a["critical_path"]["time_ns"], a["total_ns"]);
}

TEST(ProfileCli, TextNamesTheBoundAndThePath) {
  const CliResult r = run_cli({"profile", "matmul_fully_optimized", "--top", "2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "bound: TensorE")) << r.out;
  EXPECT_TRUE(has(r.out, "critical path:")) << r.out;
  EXPECT_TRUE(has(r.out, "MFU 99.")) << r.out;
  EXPECT_TRUE(has(r.out, "multiply_moving")) << r.out;
}

TEST(ProfileCli, BadInputNamesWhatIsWrong) {
  CliResult r = run_cli({"profile"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "TARGET")) << r.err;
  r = run_cli({"profile", "no_such_kernel"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "no such kernel")) << r.err;
  r = run_cli({"profile", "softmax", "--top", "-3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--top")) << r.err;
  r = run_cli({"profile", "softmax", "--max-sim-time", "soon"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--max-sim-time")) << r.err;
}

}  // namespace
}  // namespace trnsim::cli
