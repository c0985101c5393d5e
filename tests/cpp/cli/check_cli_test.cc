// `trnsim check` end to end through cli::run: the exit code says race-free (0), findings (1)
// or a program that cannot be checked (2, naming the file and line), and the chip's DMA
// write barrier, or a --set of it, decides the spill-and-reload program.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"

namespace trnsim::cli {
namespace {

struct Result {
  int code;
  std::string out, err;
};

Result check(std::vector<std::string> args) {
  args.insert(args.begin(), "check");
  std::ostringstream out, err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

std::string data(const std::string& file) {
  return (std::filesystem::path(TRNSIM_TEST_DATA_DIR) / "races" / file).string();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckCli, RaceFreeIsZero) {
  const Result r = check({data("raw_missing_wait.fixed.s")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "raw_missing_wait.fixed.s: race-free on trn2")) << r.out;
}

TEST(CheckCli, FindingsAreOneAndNameBothInstructions) {
  const std::string file = data("raw_missing_wait.s");
  const Result r = check({file});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(has(r.out, file + ": read-after-write: act[0] (raw_missing_wait.s:7) `activation"))
      << r.out;
  EXPECT_TRUE(has(r.out, "dve[0] (raw_missing_wait.s:10) `tensor_copy")) << r.out;
  EXPECT_TRUE(has(r.out, "sbuf partitions 0-127 bytes 0-1023")) << r.out;

  const Result j = check({file, "--json"});
  EXPECT_EQ(j.code, 1);
  const auto json = nlohmann::json::parse(j.out);
  EXPECT_EQ(json["program"], file);
  EXPECT_EQ(json["findings"].size(), 1u);
  EXPECT_EQ(json["findings"][0]["kind"], "read-after-write");
}

TEST(CheckCli, TheChipsWriteBarrierDecides) {
  const std::string file = data("reload_same_queue.s");
  EXPECT_EQ(check({file, "--chip", "trn1"}).code, 1);
  EXPECT_EQ(check({file, "--chip", "trn2"}).code, 0);
  EXPECT_EQ(check({file}).code, 0);  // no .chip in the file: trn2
  const Result what_if =
      check({file, "--chip", "trn2", "--set", "core.dma.write_barrier=write-after-write"});
  EXPECT_EQ(what_if.code, 1) << what_if.err;
  EXPECT_TRUE(has(what_if.out, "DMA write barrier: write-after-write")) << what_if.out;
}

TEST(CheckCli, BadInputIsTwoAndSaysWhere) {
  const Result missing = check({"no/such/program.s"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_TRUE(has(missing.err, "no/such/program.s")) << missing.err;

  const auto path = std::filesystem::temp_directory_path() / "trnsim_check_cli_bad.s";
  std::ofstream(path) << "# a bad program\n.engine dve\n  frobnicate sbuf[0:1] [] fp32\n";
  const Result bad = check({path.string()});
  std::filesystem::remove(path);
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.err, path.string() + ":3")) << bad.err;

  const Result big = check({data("raw_missing_wait.s"), "--max-instructions", "1"});
  EXPECT_EQ(big.code, 2);
  EXPECT_TRUE(has(big.out, "too-big")) << big.out;
}

}  // namespace
}  // namespace trnsim::cli
