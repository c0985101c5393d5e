// The system and runtime data files: every file loads with sources, and bad input names its
// file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "fabric/runtime.h"
#include "fabric/system.h"

namespace trnsim::fabric {
namespace {

namespace fs = std::filesystem;

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("trnsim_fabric_" + name + ".toml");
  std::ofstream(p) << text;
  return p;
}

TEST(Systems, EveryListedSystemLoadsWithItsChip) {
  const std::vector<std::string> names = list_systems();
  for (const char* want :
       {"trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2-ultraserver",
        "trn3-ultraserver-64", "trn3-ultraserver-144", "trn4-ultraserver", "trn4-ultracluster"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  for (const auto& n : names) {
    const SystemSpec s = load_system(n);
    EXPECT_GT(s.chips(), 0) << n;
    EXPECT_FALSE(s.chip.meta.name.empty()) << n;
    for (const auto& [key, rec] : s.fields)
      EXPECT_NE(rec.prov.kind, arch::ProvenanceKind::kOverride) << n << " " << key;
  }
}

TEST(Systems, ChipCountsMatchTheFactSheet) {
  EXPECT_EQ(load_system("trn1.32xlarge").chips(), 16);
  EXPECT_EQ(load_system("trn2.48xlarge").chips(), 16);
  EXPECT_EQ(load_system("trn2-ultraserver").chips(), 64);
  EXPECT_EQ(load_system("trn3-ultraserver-64").chips(), 64);
  EXPECT_EQ(load_system("trn3-ultraserver-144").chips(), 144);
  EXPECT_EQ(load_system("trn4-ultraserver").chips(), 128);
  EXPECT_EQ(load_system("trn4-ultracluster").chips(), 32768);
  const SystemSpec us = load_system("trn2-ultraserver");
  EXPECT_EQ(us.torus_dims, (std::vector<int64_t>{4, 4, 4}));
  EXPECT_EQ(us.outer_dims, 1);
  EXPECT_EQ(us.chip.meta.name, "trn2");
  EXPECT_DOUBLE_EQ(load_system("trn1.32xlarge").efa_gbps_per_server, 100);  // 800 Gbit/s
}

TEST(Systems, OverridesAndServers) {
  const SystemSpec s = load_system("trn4-ultracluster", {{"cluster.servers", "800"}});
  EXPECT_EQ(s.chips(), 800 * 128);
  EXPECT_EQ(s.fields.at("cluster.servers").prov.kind, arch::ProvenanceKind::kOverride);
  EXPECT_THROW(load_system("trn1.32xlarge", {{"cluster.nonsense", "1"}}), InputError);
}

TEST(Systems, UnknownKeyNamesFileAndLine) {
  const fs::path p = write_temp("unknown", R"([meta]
name = "x"
chip = "trn1"
[server]
chips = { v = 16, src = "HW-I1" }
wires = { v = 3, src = "HW-I1" }
)");
  try {
    load_system(p.string());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p.string() + ":6");
    EXPECT_EQ(e.key(), "server.wires");
  }
}

TEST(Systems, ALeafWithoutSourceIsAnError) {
  const fs::path p = write_temp("nosrc", R"([meta]
name = "x"
chip = "trn1"
[server]
chips = 16
)");
  try {
    load_system(p.string());
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), p.string() + ":5");
    EXPECT_EQ(e.key(), "server.chips");
  }
}

TEST(Systems, WhatIfInheritsAndOverridesWithBareValues) {
  const fs::path p = write_temp("whatif", R"([meta]
name = "fat-trn1"
inherits = "trn1.32xlarge"
status = "what-if"
[server]
link_gbps = 400
)");
  const SystemSpec s = load_system(p.string());
  EXPECT_DOUBLE_EQ(s.link_gbps, 400);
  EXPECT_EQ(s.chips(), 16);
  EXPECT_EQ(s.files.size(), 2u);
}

TEST(Systems, TorusSizesMustMultiplyToTheChips) {
  EXPECT_THROW(load_system("trn1.32xlarge", {{"server.torus_dims", "[4, 3]"}}), InputError);
}

TEST(Runtime, TheDefaultRuntimeCarriesTheLaunchCost) {
  const RuntimeSpec r = load_runtime(kDefaultRuntime);
  EXPECT_DOUBLE_EQ(r.launch_us, 58);
  EXPECT_LT(r.overlap_us, r.launch_us);
  EXPECT_DOUBLE_EQ(r.mesh_max_bytes, 1024.0 * 1024.0);
  EXPECT_EQ(r.fields.at("launch.launch_us").prov.kind, arch::ProvenanceKind::kSource);
  EXPECT_THROW(load_runtime("nope"), InputError);
  EXPECT_THROW(load_runtime(kDefaultRuntime, {{"launch.overlap_us", "100"}}), InputError);
}

// `--set` keys are routed to the runtime file by its tables, the rest to the system.
TEST(Runtime, OverridesAreRoutedByTheRuntimeTables) {
  for (const char* k : {"launch.launch_us", "sync.peer_us", "sync.ranks_per_proxy",
                        "select.rdh_max_bytes", "sync.unknown"})
    EXPECT_TRUE(is_runtime_key(k)) << k;
  for (const char* k : {"cluster.servers", "server.link_gbps", "collective.lnc", "launch", ""})
    EXPECT_FALSE(is_runtime_key(k)) << k;
  const RuntimeSpec r = load_runtime("neuron-2.28", {{"sync.peer_us", "0.5"}});
  EXPECT_DOUBLE_EQ(r.peer_sync_us, 0.5);
}

}  // namespace
}  // namespace trnsim::fabric
