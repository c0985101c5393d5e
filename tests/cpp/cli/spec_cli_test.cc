// `trnsim spec` end to end through cli::run, as a user types it.
#include <gtest/gtest.h>

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

Result run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = run(args, out, err);
  return {code, out.str(), err.str()};
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SpecCli, PrintsAChipLikeTheSeedTables) {
  const Result r = run_cli({"spec", "trn2"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part :
       {"Trainium2", "8 x NeuronCore-v3", "1,299 TFLOPS", "667 TFLOPS", "2,563 TFLOPS", "96 GiB",
        "2.9 TB/s", "224 MiB", "3.5 TB/s", "1.28 TB/s", "HW-T2", "also 20 (AG3)", "trn2.48xlarge",
        "Trn2 UltraServer", "629.15 TFLOPS = 8 cores x 78.64 TFLOPS"}) {
    EXPECT_TRUE(has(r.out, part)) << part << "\n" << r.out;
  }
}

TEST(SpecCli, CompareShowsTheSeedRatios) {
  const Result r = run_cli({"spec", "--compare", "trn1", "trn2", "trn3"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"6.8x", "13.2x", "3.5x", "3.0x", "4.5x", "3.6x", "6.1x", "3.3x", "6.7x",
                           "4.0x", "0.8 TB/s ^", "820 GiB/s (HW-T1)"}) {
    EXPECT_TRUE(has(r.out, part)) << part << "\n" << r.out;
  }
}

TEST(SpecCli, JsonParses) {
  const Result spec = run_cli({"spec", "trn3", "--json"});
  ASSERT_EQ(spec.code, 0) << spec.err;
  const auto j = nlohmann::json::parse(spec.out);
  EXPECT_EQ(j["values"]["chip"]["cores"], 8);
  EXPECT_EQ(j["fields"]["chip.tflops.fp8"]["provenance"]["sources"][0], "HW-T3");
  EXPECT_NEAR(j["derived"]["ultraserver.fp8_pflops"]["value"].get<double>(), 362.448, 1e-9);

  const Result cmp =
      run_cli({"spec", "--compare", "trn1", "trn2", "trn3", "trn4-projected", "--json"});
  ASSERT_EQ(cmp.code, 0) << cmp.err;
  const auto c = nlohmann::json::parse(cmp.out);
  EXPECT_EQ(c["baseline"], "trn1");
  EXPECT_EQ(c["chips"].size(), 4u);

  const Result keys = run_cli({"spec", "--keys", "--json"});
  ASSERT_EQ(keys.code, 0);
  EXPECT_GT(nlohmann::json::parse(keys.out)["keys"].size(), 100u);
}

TEST(SpecCli, SetOverridesAndRejects) {
  const Result ok = run_cli({"spec", "trn3", "--set", "core.tensor.clock_ghz=3.0", "--set",
                             "numerics.overflow=saturate", "--json"});
  ASSERT_EQ(ok.code, 0) << ok.err;
  const auto j = nlohmann::json::parse(ok.out);
  EXPECT_EQ(j["values"]["core"]["tensor"]["clock_ghz"], 3.0);
  EXPECT_EQ(j["values"]["numerics"]["overflow"], "saturate");
  EXPECT_EQ(j["fields"]["core.tensor.clock_ghz"]["provenance"]["kind"], "override");

  const Result bad = run_cli({"spec", "trn3", "--set", "core.tensor.clok_ghz=3.0"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.err, "--set")) << bad.err;
  EXPECT_TRUE(has(bad.err, "core.tensor.clok_ghz")) << bad.err;
}

TEST(SpecCli, BadChipNameIsAnInputError) {
  const Result r = run_cli({"spec", "trn9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "trn9")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(SpecCli, KeysAndList) {
  const Result keys = run_cli({"spec", "--keys"});
  ASSERT_EQ(keys.code, 0);
  EXPECT_TRUE(has(keys.out, "core.tensor.clock_ghz"));
  EXPECT_TRUE(has(keys.out, "GHz"));
  const Result list = run_cli({"spec"});
  ASSERT_EQ(list.code, 0);
  EXPECT_TRUE(has(list.out, "trn4-projected"));
}

TEST(SpecCli, DefaultJobComparesThenShowsTrn2) {
  const Result r = run_cli({});
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t compare = r.out.find("relative to trn1");
  const size_t trn2 = r.out.find("trn2: Trainium2");
  ASSERT_NE(compare, std::string::npos) << r.out;
  ASSERT_NE(trn2, std::string::npos) << r.out;
  EXPECT_LT(compare, trn2);
  EXPECT_TRUE(has(r.out, "trn4-projected"));
}

}  // namespace
}  // namespace trnsim::cli
