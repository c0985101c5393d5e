// docs/VALIDATION.md section 1: every peak figure of the seeds' spec tables follows from the data
// files, exactly where the seeds give the number. The expected values below are typed in from
// VALIDATION.md and the seeds, not read from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "arch/arch.h"
#include "arch/derived.h"
#include "arch/spec_view.h"

namespace trnsim::arch {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

const ChipSpec& chip(const std::string& name) {
  static const ChipSpec t1 = load_chip("trn1"), t2 = load_chip("trn2"), t3 = load_chip("trn3"),
                        t4 = load_chip("trn4-projected");
  return name == "trn1" ? t1 : name == "trn2" ? t2 : name == "trn3" ? t3 : t4;
}

double round_to(double x, double step) { return std::round(x / step) * step; }

TEST(SpecFigures, NeuronCoresPerChip) {
  EXPECT_EQ(chip("trn1").chip.cores, 2);
  EXPECT_EQ(chip("trn2").chip.cores, 8);
  EXPECT_EQ(chip("trn3").chip.cores, 8);
  EXPECT_EQ(chip("trn1").core.version, 2);
  EXPECT_EQ(chip("trn2").core.version, 3);
  EXPECT_EQ(chip("trn3").core.version, 4);
}

TEST(SpecFigures, ChipTflopsAsPublished) {
  const auto& t1 = chip("trn1").chip;
  EXPECT_EQ(t1.tflops.fp8, 190);
  EXPECT_EQ(t1.fp8_label, "cFP8");
  EXPECT_EQ(t1.tflops.bf16, 190);
  EXPECT_EQ(t1.tflops.fp32, 47.5);
  EXPECT_FALSE(t1.tflops.sparse.has_value());
  EXPECT_EQ(t1.int8_tops, 380);

  const auto& t2 = chip("trn2").chip;
  EXPECT_EQ(t2.tflops.fp8, 1299);
  EXPECT_EQ(t2.tflops.bf16, 667);
  EXPECT_EQ(t2.tflops.fp32, 181);
  EXPECT_EQ(t2.tflops.sparse, 2563);

  const auto& t3 = chip("trn3").chip;
  EXPECT_EQ(t3.tflops.fp8, 2517);
  EXPECT_EQ(t3.tflops.fp4, 2517);
  EXPECT_EQ(t3.fp8_label, "MXFP8/MXFP4");
  EXPECT_EQ(t3.tflops.bf16, 671);
  EXPECT_EQ(t3.tflops.fp32, 183);
  EXPECT_EQ(t3.tflops.sparse, 2517);
}

TEST(SpecFigures, HbmCapacityAndBandwidth) {
  EXPECT_EQ(chip("trn1").chip.hbm.capacity_gib, 32);
  EXPECT_EQ(chip("trn2").chip.hbm.capacity_gib, 96);
  EXPECT_EQ(chip("trn3").chip.hbm.capacity_gib, 144);
  // Trn1: 820 GiB/s as HW-T1 publishes it, held in GB/s.
  EXPECT_DOUBLE_EQ(chip("trn1").chip.hbm.bandwidth_gbps, 820 * kGiB / 1e9);
  EXPECT_EQ(chip("trn1").fields.at("chip.hbm.bandwidth_gbps").prov.as_published, "820 GiB/s");
  EXPECT_DOUBLE_EQ(chip("trn2").chip.hbm.bandwidth_gbps, 2900);
  EXPECT_DOUBLE_EQ(chip("trn3").chip.hbm.bandwidth_gbps, 4900);
  // Seed 000's summary uses 0.8 TB/s for Trn1; it is kept as a cited alternative.
  const auto seed = pick(chip("trn1"), "chip.hbm.bandwidth_gbps", "seed000");
  ASSERT_TRUE(seed.has_value());
  EXPECT_TRUE(seed->is_alternative);
  EXPECT_DOUBLE_EQ(as_number(seed->value), 800);
}

TEST(SpecFigures, SbufPerChipPublishedAndDerived) {
  const std::tuple<const char*, double, double> cases[] = {
      {"trn1", 48, 24}, {"trn2", 224, 28}, {"trn3", 256, 32}};
  for (const auto& [name, mib, per_core] : cases) {
    SCOPED_TRACE(name);
    EXPECT_EQ(chip(name).chip.sbuf_mib, mib);
    const Derived d = derive(chip(name));
    EXPECT_DOUBLE_EQ(d.at("chip.sbuf_mib"), mib);
    EXPECT_DOUBLE_EQ(d.at("core.sbuf_mib"), per_core);
  }
}

TEST(SpecFigures, InterconnectDmaAndCcCores) {
  EXPECT_DOUBLE_EQ(chip("trn1").chip.link.bandwidth_gbps, 384);
  EXPECT_DOUBLE_EQ(chip("trn2").chip.link.bandwidth_gbps, 1280);
  EXPECT_DOUBLE_EQ(chip("trn3").chip.link.bandwidth_gbps, 2560);
  EXPECT_DOUBLE_EQ(chip("trn1").chip.dma.bandwidth_gbps, 1000);
  EXPECT_DOUBLE_EQ(chip("trn2").chip.dma.bandwidth_gbps, 3500);
  EXPECT_DOUBLE_EQ(chip("trn3").chip.dma.bandwidth_gbps, 4900);
  EXPECT_EQ(chip("trn1").chip.cc_cores, 6);
  EXPECT_EQ(chip("trn2").chip.cc_cores, 16);
  EXPECT_EQ(chip("trn3").chip.cc_cores, 16);
  // HARDWARE.md s10: AG3/AG4 say 20; both values are kept.
  for (const char* name : {"trn2", "trn3"}) {
    const auto& alts = chip(name).fields.at("chip.cc_cores").alts;
    ASSERT_EQ(alts.size(), 1u) << name;
    EXPECT_EQ(std::get<int64_t>(alts[0].value), 20) << name;
  }
}

TEST(SpecFigures, PerCoreDerivationsFromClockAndArray) {
  // HARDWARE.md s1: clock x 128 x 128 x 2 x k.
  EXPECT_NEAR(derive(chip("trn1")).at("core.tflops.bf16"), 91.75, 0.005);
  EXPECT_NEAR(derive(chip("trn2")).at("core.tflops.bf16"), 78.6, 0.05);
  EXPECT_NEAR(derive(chip("trn3")).at("core.tflops.bf16"), 78.6, 0.05);
  EXPECT_NEAR(derive(chip("trn2")).at("core.tflops.fp8"), 157, 0.5);
  EXPECT_NEAR(derive(chip("trn3")).at("core.tflops.mxfp8"), 315, 0.5);
  EXPECT_NEAR(derive(chip("trn3")).at("core.tflops.fp32"), 20, 0.5);
  // Chip = cores x per core, next to the published figure (HARDWARE.md s10).
  const Derived d2 = derive(chip("trn2"));
  EXPECT_NEAR(d2.at("chip.tflops.bf16"), 8 * 78.6432, 1e-9);
  EXPECT_EQ(d2.find("chip.tflops.bf16")->published_key, "chip.tflops.bf16");
  EXPECT_NEAR(derive(chip("trn3")).at("chip.tflops.fp8"), 2517, 1);
}

TEST(SpecFigures, SeedSummaryRatios) {
  // Seed 000, "総合性能向上率まとめ", rounded to one decimal as printed.
  const nlohmann::json c = compare_json({"trn1", "trn2", "trn3"});
  const std::map<std::string, std::vector<double>> expected = {
      {"fp8", {1.0, 6.8, 13.2}},         {"bf16", {1.0, 3.5, 3.5}},
      {"hbm_capacity", {1.0, 3.0, 4.5}}, {"hbm_bandwidth", {1.0, 3.6, 6.1}},
      {"interconnect", {1.0, 3.3, 6.7}}, {"neuroncores", {1.0, 4.0, 4.0}}};
  size_t seen = 0;
  for (const auto& row : c["rows"]) {
    const auto it = expected.find(row["id"]);
    if (it == expected.end()) continue;
    EXPECT_TRUE(row["seed_summary"].get<bool>());
    ++seen;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_DOUBLE_EQ(row["cells"][i]["ratio_one_decimal"].get<double>(), it->second[i])
          << row["id"] << " " << i;
    }
  }
  EXPECT_EQ(seen, expected.size());
}

TEST(SpecFigures, Trn3UltraServer) {
  const ChipSpec& t3 = chip("trn3");
  ASSERT_TRUE(t3.ultraserver.present);
  EXPECT_EQ(t3.ultraserver.chips, 144);
  const Derived d = derive(t3);
  EXPECT_DOUBLE_EQ(d.at("ultraserver.chips"), 144);  // 36 servers x 4
  // 362 FP8 PFLOPS = 144 x 2,517 TFLOPS (HW-I3: 362,448 TFLOPS).
  EXPECT_DOUBLE_EQ(d.at("ultraserver.fp8_pflops"), 362.448);
  EXPECT_EQ(round_to(d.at("ultraserver.fp8_pflops"), 1), 362);
  EXPECT_NEAR(*t3.ultraserver.published.fp8_pflops, 362.448, 1e-9);
  // 706 TB/s = 144 x 4.9 TB/s = 705.6.
  EXPECT_NEAR(d.at("ultraserver.hbm_bandwidth_gbps"), 705600, 1e-6);
  EXPECT_EQ(round_to(d.at("ultraserver.hbm_bandwidth_gbps") / 1000, 1), 706);
  // The seed's "20.7 TB" is 144 x 144 GiB = 20,736 GiB counted in thousands; the same bytes are
  // 20.25 TiB (HW-I3's 20,736 GiB).
  EXPECT_DOUBLE_EQ(d.at("ultraserver.hbm_capacity_gib"), 20736);
  EXPECT_DOUBLE_EQ(round_to(d.at("ultraserver.hbm_capacity_gib") / 1000, 0.1), 20.7);
  EXPECT_DOUBLE_EQ(d.at("ultraserver.hbm_capacity_gib") / 1024, 20.25);
  EXPECT_EQ(*t3.ultraserver.published.hbm_capacity_gib, 20736);
  bool seed_kept = false;
  for (const auto& a : t3.fields.at("ultraserver.published.hbm_capacity_gib").alts) {
    seed_kept = seed_kept || (a.prov.cites("seed002") && a.prov.as_published == "20.7 TB");
  }
  EXPECT_TRUE(seed_kept);
}

TEST(SpecFigures, Trn4Projection) {
  const ChipSpec& t3 = chip("trn3");
  const ChipSpec& t4 = chip("trn4-projected");
  EXPECT_EQ(t4.meta.status, "projected");
  EXPECT_EQ(t4.lineage, (std::vector<std::string>{"trn3", "trn4-projected"}));
  EXPECT_EQ(*t4.chip.tflops.fp8, 3 * *t3.chip.tflops.fp8);  // T4: at least 3x FP8
  EXPECT_EQ(*t4.chip.tflops.fp4, 6 * *t3.chip.tflops.fp4);  // T4/seed001: 6x FP4
  EXPECT_DOUBLE_EQ(t4.chip.hbm.bandwidth_gbps, 4 * t3.chip.hbm.bandwidth_gbps);
  EXPECT_DOUBLE_EQ(t4.chip.link.bandwidth_gbps, 4 * t3.chip.link.bandwidth_gbps);
  EXPECT_EQ(t4.core.tensor.clock_ghz, t3.core.tensor.clock_ghz);  // "everything but the clocks"
  ASSERT_TRUE(t4.ultraserver.present);
  EXPECT_EQ(t4.ultraserver.chips, 128);
  ASSERT_TRUE(t4.ultracluster.present);
  EXPECT_EQ(t4.ultracluster.chips, 32768);
  EXPECT_DOUBLE_EQ(derive(t4).at("ultracluster.chips"), 256 * 128);
  EXPECT_FALSE(t4.server.present);  // Trn3's servers are dropped, not inherited
  // What is not public is marked: an assumption, or inherited from trn3.
  EXPECT_EQ(t4.fields.at("chip.cores").prov.kind, ProvenanceKind::kAssumption);
  EXPECT_EQ(t4.fields.at("core.sbuf.partitions").prov.inherited_from, "trn3");
}

}  // namespace
}  // namespace trnsim::arch
