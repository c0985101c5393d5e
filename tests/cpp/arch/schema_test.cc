// The schema checks itself and the data files against it: every key documented, every
// generation file fully sourced, every value survives dump -> `--set` -> dump unchanged (so each
// key's binding reads and writes the same member).
#include "arch/schema.h"

#include <gtest/gtest.h>

#include <string>

#include "arch/arch.h"
#include "arch/derived.h"
#include "arch/sources.h"

namespace trnsim::arch {
namespace {

TEST(SpecSchema, EveryKeyIsDocumented) {
  ASSERT_GT(schema().keys().size(), 100u);
  for (const auto& k : schema().keys()) {
    EXPECT_FALSE(k.help.empty()) << k.key;
    EXPECT_TRUE(k.set && k.get && k.clear) << k.key;
    EXPECT_EQ(schema().find(k.key), &k) << k.key;
    // Units are in the key's name for quantities whose unit is not obvious.
    if (k.key.ends_with("_ghz")) EXPECT_EQ(k.unit, "GHz") << k.key;
    if (k.key.ends_with("_gbps")) EXPECT_EQ(k.unit, "GB/s") << k.key;
    if (k.key.ends_with("_gib")) EXPECT_EQ(k.unit, "GiB") << k.key;
    if (k.key.ends_with("_ns")) EXPECT_EQ(k.unit, "ns") << k.key;
  }
  const std::string keys = format_keys();
  for (const auto& k : schema().keys()) EXPECT_NE(keys.find(k.key), std::string::npos) << k.key;
  EXPECT_EQ(schema_json()["keys"].size(), schema().keys().size());
}

TEST(SpecSchema, GenerationFilesAreFullySourced) {
  const auto chips = list_chips();
  for (const char* name : {"trn1", "trn2", "trn3", "trn4-projected"}) {
    EXPECT_NE(std::find(chips.begin(), chips.end(), name), chips.end()) << name;
    const ChipSpec s = load_chip(name);
    EXPECT_EQ(s.meta.kind, "generation") << name;
    for (const auto& [key, rec] : s.fields) {
      EXPECT_NE(rec.prov.kind, ProvenanceKind::kOverride) << name << " " << key;
      EXPECT_FALSE(rec.prov.text.empty()) << name << " " << key;
      if (rec.prov.kind == ProvenanceKind::kSource) {
        EXPECT_EQ(first_unknown_source(rec.prov.text), "") << name << " " << key;
      }
    }
  }
}

TEST(SpecSchema, EveryValueRoundTripsThroughSet) {
  for (const auto& name : list_chips()) {
    SCOPED_TRACE(name);
    const ChipSpec s = load_chip(name);
    const nlohmann::json before = chip_to_json(s);
    std::vector<Override> overrides;
    for (const auto& [key, f] : before["fields"].items()) {
      // JSON scalars and arrays are also TOML values.
      overrides.push_back({key, f["value"].dump()});
    }
    const nlohmann::json after = chip_to_json(load_chip(name, overrides));
    EXPECT_EQ(after["values"], before["values"]);
    EXPECT_EQ(after["derived"], before["derived"]);
  }
}

TEST(SpecSchema, DerivedFiguresPointAtRealKeys) {
  for (const auto& name : list_chips()) {
    for (const auto& f : derive(load_chip(name)).figures) {
      if (!f.published_key.empty()) EXPECT_NE(schema().find(f.published_key), nullptr) << f.key;
      EXPECT_FALSE(f.how.empty()) << f.key;
      for (const auto& in : f.inputs) {
        const bool known =
            schema().find(in) != nullptr || in.starts_with("core.") || in.starts_with("chip.");
        EXPECT_TRUE(known) << f.key << " <- " << in;
      }
    }
  }
}

TEST(SpecSchema, NumericPolicyComesFromTheSpec) {
  const ChipSpec s = load_chip("trn2");
  EXPECT_EQ(s.numerics.policy().overflow, num::Overflow::kInfinity);
  EXPECT_EQ(s.numerics.policy().nan, num::NanMode::kPropagate);
  EXPECT_EQ(s.numerics.policy().sr_random_bits, 16);
  EXPECT_EQ(s.fields.at("numerics.sr_random_bits").prov.kind, ProvenanceKind::kAssumption);
  // Legacy e4m3 on the TensorE through Trn3, not after (ERR EVRF052); e4m3fn from Trn3.
  auto takes = [](const char* chip, const char* fmt) {
    const auto& f = load_chip(chip).numerics.tensor_fp8_formats;
    return std::find(f.begin(), f.end(), fmt) != f.end();
  };
  EXPECT_TRUE(takes("trn3", "fp8_e4m3"));
  EXPECT_FALSE(takes("trn4-projected", "fp8_e4m3"));
  EXPECT_FALSE(takes("trn2", "fp8_e4m3fn"));
  EXPECT_TRUE(takes("trn3", "fp8_e4m3fn"));
}

}  // namespace
}  // namespace trnsim::arch
