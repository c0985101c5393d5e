// `trnsim spec` end to end through cli::run, as a user types it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli_test_util.h"

namespace trnsim::cli {
namespace {

TEST(SpecCli, PrintsAChipLikeTheSeedTables) {
  const CliResult r = run_cli({"spec", "trn2"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part :
       {"Trainium2", "8 x NeuronCore-v3", "1,299 TFLOPS", "667 TFLOPS", "2,563 TFLOPS", "96 GiB",
        "2.9 TB/s", "224 MiB", "3.5 TB/s", "1.28 TB/s", "HW-T2", "also 20 (AG3)", "trn2.48xlarge",
        "Trn2 UltraServer", "629.15 TFLOPS = 8 cores x 78.64 TFLOPS"}) {
    EXPECT_TRUE(has(r.out, part)) << part << "\n" << r.out;
  }
}

TEST(SpecCli, CompareShowsTheSeedRatios) {
  const CliResult r = run_cli({"spec", "--compare", "trn1", "trn2", "trn3"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"6.8x", "13.2x", "3.5x", "3.0x", "4.5x", "3.6x", "6.1x", "3.3x", "6.7x",
                           "4.0x", "0.8 TB/s ^", "820 GiB/s (HW-T1)"}) {
    EXPECT_TRUE(has(r.out, part)) << part << "\n" << r.out;
  }
}

TEST(SpecCli, JsonParses) {
  const CliResult spec = run_cli({"spec", "trn3", "--json"});
  ASSERT_EQ(spec.code, 0) << spec.err;
  const auto j = nlohmann::json::parse(spec.out);
  EXPECT_EQ(j["values"]["chip"]["cores"], 8);
  EXPECT_EQ(j["fields"]["chip.tflops.fp8"]["provenance"]["sources"][0], "HW-T3");
  EXPECT_NEAR(j["derived"]["ultraserver.fp8_pflops"]["value"].get<double>(), 362.448, 1e-9);

  const CliResult cmp =
      run_cli({"spec", "--compare", "trn1", "trn2", "trn3", "trn4-projected", "--json"});
  ASSERT_EQ(cmp.code, 0) << cmp.err;
  const auto c = nlohmann::json::parse(cmp.out);
  EXPECT_EQ(c["baseline"], "trn1");
  EXPECT_EQ(c["chips"].size(), 4u);

  const CliResult keys = run_cli({"spec", "--keys", "--json"});
  ASSERT_EQ(keys.code, 0);
  EXPECT_GT(nlohmann::json::parse(keys.out)["keys"].size(), 100u);
}

TEST(SpecCli, SetOverridesAndRejects) {
  const CliResult ok = run_cli({"spec", "trn3", "--set", "core.tensor.clock_ghz=3.0", "--set",
                                "numerics.overflow=saturate", "--json"});
  ASSERT_EQ(ok.code, 0) << ok.err;
  const auto j = nlohmann::json::parse(ok.out);
  EXPECT_EQ(j["values"]["core"]["tensor"]["clock_ghz"], 3.0);
  EXPECT_EQ(j["values"]["numerics"]["overflow"], "saturate");
  EXPECT_EQ(j["fields"]["core.tensor.clock_ghz"]["provenance"]["kind"], "override");

  const CliResult bad = run_cli({"spec", "trn3", "--set", "core.tensor.clok_ghz=3.0"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(has(bad.err, "--set")) << bad.err;
  EXPECT_TRUE(has(bad.err, "core.tensor.clok_ghz")) << bad.err;
}

TEST(SpecCli, BadChipNameIsAnInputError) {
  const CliResult r = run_cli({"spec", "trn9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "trn9")) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(SpecCli, KeysAndList) {
  const CliResult keys = run_cli({"spec", "--keys"});
  ASSERT_EQ(keys.code, 0);
  EXPECT_TRUE(has(keys.out, "core.tensor.clock_ghz"));
  EXPECT_TRUE(has(keys.out, "GHz"));
  const CliResult list = run_cli({"spec"});
  ASSERT_EQ(list.code, 0);
  EXPECT_TRUE(has(list.out, "trn4-projected"));
}

}  // namespace
}  // namespace trnsim::cli
