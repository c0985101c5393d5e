// What-if chips: a file that inherits a generation and overrides keys, and `--set` overrides.
// An override changes that value and the derived figures computed from it, nothing else.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "arch/arch.h"
#include "arch/derived.h"
#include "base/error.h"

namespace trnsim::arch {
namespace {

const std::string kWhatIf = std::string(TRNSIM_TEST_DATA_DIR) + "/spec_whatif/";

// Keys whose value (or, for derived figures, whose number) differs between two chips.
std::set<std::string> changed_fields(const nlohmann::json& a, const nlohmann::json& b) {
  std::set<std::string> out;
  for (const auto& [key, f] : a["fields"].items()) {
    if (!b["fields"].contains(key) || b["fields"][key]["value"] != f["value"]) out.insert(key);
  }
  for (const auto& [key, f] : b["fields"].items()) {
    if (!a["fields"].contains(key)) out.insert(key);
  }
  return out;
}
std::set<std::string> changed_derived(const nlohmann::json& a, const nlohmann::json& b) {
  std::set<std::string> out;
  for (const auto& [key, f] : a["derived"].items()) {
    if (b["derived"][key]["value"] != f["value"]) out.insert(key);
  }
  return out;
}

TEST(SpecWhatIf, FileOverrideChangesOnlyThatValueAndItsDerivations) {
  const ChipSpec base = load_chip("trn3");
  const ChipSpec fast = load_chip(kWhatIf + "trn3_fast_pe.toml");
  EXPECT_EQ(fast.meta.name, "trn3_fast_pe");  // default: the file name
  EXPECT_EQ(fast.meta.kind, "what-if");
  EXPECT_EQ(fast.core.tensor.clock_ghz, 3.0);

  const Provenance& p = fast.fields.at("core.tensor.clock_ghz").prov;
  EXPECT_EQ(p.kind, ProvenanceKind::kOverride);
  EXPECT_EQ(p.where, kWhatIf + "trn3_fast_pe.toml:7");
  EXPECT_EQ(fast.fields.at("core.tensor.pe_rows").prov.inherited_from, "trn3");

  const nlohmann::json a = chip_to_json(base), b = chip_to_json(fast);
  EXPECT_EQ(changed_fields(a, b), std::set<std::string>{"core.tensor.clock_ghz"});
  // Every TensorE peak scales by 3.0 / 2.4; SBUF, DMA, HBM and the published-figure totals
  // do not move.
  const std::set<std::string> derived = changed_derived(a, b);
  for (const auto& key : derived) {
    const bool tensor = key.starts_with("core.tflops.") || key.starts_with("chip.tflops.") ||
                        key.ends_with("_from_cores");
    EXPECT_TRUE(tensor) << key;
    const double ratio =
        b["derived"][key]["value"].get<double>() / a["derived"][key]["value"].get<double>();
    EXPECT_NEAR(ratio, 3.0 / 2.4, 1e-12) << key;
  }
  EXPECT_TRUE(derived.contains("core.tflops.bf16"));
  EXPECT_TRUE(derived.contains("chip.tflops.fp8"));
  EXPECT_TRUE(derived.contains("ultraserver.fp8_pflops_from_cores"));
  EXPECT_FALSE(derived.contains("chip.sbuf_mib"));
  EXPECT_FALSE(derived.contains("ultraserver.fp8_pflops"));
}

TEST(SpecWhatIf, PathInheritanceAndSourcedOverrides) {
  const ChipSpec more = load_chip(kWhatIf + "trn2_more_hbm.toml");
  EXPECT_EQ(more.meta.name, "trn2-more-hbm");
  EXPECT_EQ(more.chip.hbm.capacity_gib, 144);
  EXPECT_EQ(more.fields.at("chip.hbm.capacity_gib").prov.kind, ProvenanceKind::kSource);
  EXPECT_DOUBLE_EQ(more.chip.hbm.bandwidth_gbps, 4900);
  EXPECT_EQ(more.fields.at("chip.hbm.bandwidth_gbps").prov.kind, ProvenanceKind::kOverride);
  EXPECT_TRUE(more.fields.at("chip.hbm.bandwidth_gbps").alts.empty());  // trn2's are replaced
  EXPECT_DOUBLE_EQ(derive(more).at("server.hbm_capacity_gib"), 16 * 144);
}

TEST(SpecWhatIf, SetMatchesTheEquivalentFile) {
  const ChipSpec set = load_chip("trn3", {parse_override("core.tensor.clock_ghz=3.0")});
  const ChipSpec file = load_chip(kWhatIf + "trn3_fast_pe.toml");
  EXPECT_EQ(chip_to_json(set)["values"], chip_to_json(file)["values"]);
  EXPECT_EQ(chip_to_json(set)["derived"], chip_to_json(file)["derived"]);
  const Provenance& p = set.fields.at("core.tensor.clock_ghz").prov;
  EXPECT_EQ(p.kind, ProvenanceKind::kOverride);
  EXPECT_EQ(p.where, "--set");
}

TEST(SpecWhatIf, SetParsesPerSchemaType) {
  const ChipSpec s = load_chip(
      "trn2", {parse_override("numerics.overflow=saturate"), parse_override("chip.cores=4"),
               parse_override("core.tensor.row_tile_sizes=[128, 64]"),
               parse_override("core.features.bf16_psum=true"),
               parse_override("chip.hbm.bandwidth_gbps=3000")});
  EXPECT_EQ(s.numerics.policy().overflow, num::Overflow::kSaturate);
  EXPECT_EQ(s.chip.cores, 4);
  EXPECT_EQ(s.core.tensor.row_tile_sizes, (std::vector<int>{128, 64}));
  EXPECT_TRUE(s.core.features.bf16_psum);
  EXPECT_DOUBLE_EQ(derive(s).at("chip.tflops.bf16"),
                   4 * derive(load_chip("trn2")).at("core.tflops.bf16"));
}

// Values with units are converted to the key's unit; "xF" scales the current value.
TEST(SpecWhatIf, SetTakesUnitsAndFactors) {
  const double hbm = load_chip("trn2").chip.hbm.bandwidth_gbps;
  EXPECT_DOUBLE_EQ(load_chip("trn2", {parse_override("chip.hbm.bandwidth_gbps=9.8TB/s")})
                       .chip.hbm.bandwidth_gbps,
                   9800);
  EXPECT_NEAR(load_chip("trn2", {parse_override("chip.hbm.bandwidth_gbps=2.9 TiB/s")})
                  .chip.hbm.bandwidth_gbps,
              2.9 * 1.099511627776e3, 1e-6);
  EXPECT_DOUBLE_EQ(
      load_chip("trn2", {parse_override("chip.hbm.bandwidth_gbps=x2")}).chip.hbm.bandwidth_gbps,
      2 * hbm);
  EXPECT_DOUBLE_EQ(
      load_chip("trn2", {parse_override("core.tensor.clock_ghz=1400MHz")}).core.tensor.clock_ghz,
      1.4);
  EXPECT_EQ(load_chip("trn2", {parse_override("chip.cores=x0.5")}).chip.cores,
            load_chip("trn2").chip.cores / 2);
  // A bare number is in the key's own unit (trnsim spec --keys shows it).
  EXPECT_DOUBLE_EQ(
      load_chip("trn2", {parse_override("chip.hbm.bandwidth_gbps=9.8")}).chip.hbm.bandwidth_gbps,
      9.8);
}

void expect_set_error(const std::string& text, const std::string& key, const std::string& says) {
  try {
    load_chip("trn2", {parse_override(text)});
    FAIL() << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--set") << e.what();
    EXPECT_EQ(e.key(), key) << e.what();
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(SpecWhatIf, SetRejectsBadKeysAndValues) {
  expect_set_error("core.tensor.clok_ghz=3", "core.tensor.clok_ghz",
                   "did you mean 'core.tensor.clock_ghz'");
  expect_set_error("core.tensor.clock_ghz=fast", "core.tensor.clock_ghz", "is not a value");
  expect_set_error("core.tensor.clock_ghz=\"fast\"", "core.tensor.clock_ghz", "wrong type");
  expect_set_error("core.tensor.clock_ghz=99", "core.tensor.clock_ghz", "out of range");
  expect_set_error("chip.cores=2.5", "chip.cores", "wrong type");
  expect_set_error("numerics.overflow=clamp", "numerics.overflow", "'clamp' is not one of");
  expect_set_error("meta.name=x", "meta.name", "unknown key");
  expect_set_error("ultracluster.members=4", "ultracluster.name", "missing required key");
  expect_set_error("no-equals-sign", "no-equals-sign", "expected key=value");
  expect_set_error("chip.hbm.bandwidth_gbps=5GHz", "chip.hbm.bandwidth_gbps",
                   "is not a unit of GB/s");
  expect_set_error("chip.hbm.bandwidth_gbps=x-1", "chip.hbm.bandwidth_gbps", "xFACTOR");
  expect_set_error("chip.cores=x0.3", "chip.cores", "not a whole number");
}

}  // namespace
}  // namespace trnsim::arch
