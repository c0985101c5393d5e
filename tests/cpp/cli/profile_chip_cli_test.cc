// `trnsim profile --lnc N / --cores N` (chip/chip_profile.h) end to end: the SPMD matmul on a
// logical core and on a whole trn2. The chip's time is its slowest core's and `trnsim run`'s
// with the same options; its MFU and HBM figures are its cores' summed, checked by closed
// form; each core's profile is whole; the one-core output is as before.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "arch/arch.h"
#include "arch/derived.h"
#include "chip/chip_profile.h"
#include "cli/run_target.h"
#include "cli_test_util.h"

namespace trnsim::cli {
namespace {

// matmul_lnc's defaults: m = 128, k = 4096, n = 512, split along K over each logical core.
constexpr double kMatmulFlops = 2.0 * 128 * 4096 * 512;

double bf16_peak(const arch::ChipSpec& chip) {
  return arch::derive(chip).at("core.tflops.bf16") * 1e12;
}

double seconds(Picoseconds t) { return static_cast<double>(t.v) * 1e-12; }

// What a chip profile's figures must be, from its cores' own.
void expect_consistent(const chip::ChipProfile& p, const arch::ChipSpec& chip) {
  ASSERT_TRUE(p.ok());
  Picoseconds slowest;
  double flops = 0, issued = 0, bytes = 0;
  for (size_t c = 0; c < p.cores.size(); ++c) {
    const core::CoreProfile& cp = p.cores[c];
    slowest = std::max(slowest, cp.result.total);
    flops += cp.roofline.flops;
    issued += cp.roofline.issued_flops;
    bytes += static_cast<double>(cp.result.dma.hbm_read_bytes + cp.result.dma.hbm_write_bytes);
    // Each core's path stays within it and covers its own run.
    Picoseconds sum;
    for (Picoseconds t : cp.path.per_lane) sum += t;
    EXPECT_EQ(sum, cp.path.time) << c;
    EXPECT_EQ(cp.path.time, cp.result.total) << c;
    // Its MFU is over its own time.
    EXPECT_DOUBLE_EQ(cp.roofline.mfu,
                     cp.roofline.flops / (seconds(cp.result.total) * bf16_peak(chip)))
        << c;
  }
  EXPECT_EQ(p.total, slowest);
  EXPECT_EQ(p.cores[static_cast<size_t>(p.slowest)].result.total, p.total);
  EXPECT_EQ(p.bound, p.cores[static_cast<size_t>(p.slowest)].roofline.verdict);
  EXPECT_DOUBLE_EQ(p.flops, flops);
  EXPECT_DOUBLE_EQ(p.issued_flops, issued);
  EXPECT_DOUBLE_EQ(p.peak_flops, bf16_peak(chip));
  const auto n = static_cast<double>(p.cores.size());
  EXPECT_NEAR(p.mfu, flops / (n * bf16_peak(chip) * seconds(p.total)), 1e-12);
  EXPECT_NEAR(p.hfu, issued / (n * bf16_peak(chip) * seconds(p.total)), 1e-12);
  EXPECT_DOUBLE_EQ(p.hbm_bytes, bytes);
  EXPECT_NEAR(p.hbm_bytes_per_s, bytes / seconds(p.total), 1e-6 * p.hbm_bytes_per_s);
}

int64_t run_total_ps(const std::vector<std::string>& options) {
  std::vector<std::string> args = {"run", "matmul_lnc", "--mode", "timing", "--json"};
  args.insert(args.end(), options.begin(), options.end());
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out)["runs"][0]["result"]["total_ps"].get<int64_t>();
}

TEST(ProfileChip, ALogicalCoreOfTwoIsItsSlowerCoreAndTakesTrnsimRunsTime) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  const CorePrograms c = build_target_cores({"matmul_lnc", {}}, chip, 2, std::nullopt);
  ASSERT_EQ(c.programs.size(), 2u);
  ASSERT_EQ(c.lnc, 2);
  const chip::ChipProfile p = chip::profile_chip(chip, c.programs, c.lnc);
  expect_consistent(p, chip);
  EXPECT_EQ(p.total.v, run_total_ps({"--lnc", "2"}));
  // Each core multiplies half of K: the whole matmul between them.
  EXPECT_DOUBLE_EQ(p.flops, kMatmulFlops);
  EXPECT_DOUBLE_EQ(p.cores[0].roofline.flops, kMatmulFlops / 2);
  EXPECT_NEAR(p.mfu, kMatmulFlops / (2 * bf16_peak(chip) * seconds(p.total)), 1e-12);
  ASSERT_EQ(p.stacks.size(), 1u);
  EXPECT_EQ(p.stacks[0].cores, (std::vector<int>{0, 1}));
  // The cores trade partial sums (sendrecv) and meet at a core_barrier: somewhere a core
  // waited for the other, and its path says so instead of following it there.
  uint64_t peer = 0;
  for (const core::CoreProfile& cp : p.cores)
    peer += cp.path.edges[static_cast<size_t>(core::PathEdge::kPeer)];
  EXPECT_GT(peer, 0u);
}

TEST(ProfileChip, AWholeTrn2IsFourLogicalCoresOfTwo) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  const CorePrograms c = build_target_cores({"matmul_lnc", {}}, chip, std::nullopt, 8);
  ASSERT_EQ(c.programs.size(), 8u);
  EXPECT_EQ(c.lnc, 2);  // the chip's default for an SPMD kernel
  const chip::ChipProfile p = chip::profile_chip(chip, c.programs, c.lnc);
  expect_consistent(p, chip);
  EXPECT_EQ(p.total.v, run_total_ps({"--cores", "8"}));
  EXPECT_DOUBLE_EQ(p.flops, 4 * kMatmulFlops);  // each logical core computes the matmul
  EXPECT_NEAR(p.mfu, 4 * kMatmulFlops / (8 * bf16_peak(chip) * seconds(p.total)), 1e-12);
  ASSERT_EQ(p.stacks.size(), 4u);
  double bytes = 0;
  for (const chip::StackTraffic& s : p.stacks) {
    ASSERT_EQ(s.cores.size(), 2u);
    const double mine =
        static_cast<double>(p.cores[static_cast<size_t>(s.cores[0])].result.dma.hbm_read_bytes +
                            p.cores[static_cast<size_t>(s.cores[0])].result.dma.hbm_write_bytes +
                            p.cores[static_cast<size_t>(s.cores[1])].result.dma.hbm_read_bytes +
                            p.cores[static_cast<size_t>(s.cores[1])].result.dma.hbm_write_bytes);
    EXPECT_DOUBLE_EQ(s.hbm_bytes, mine);
    bytes += mine;
  }
  EXPECT_DOUBLE_EQ(bytes, p.hbm_bytes);
}

TEST(ProfileChip, TextAndJsonOfTheCommand) {
  CliResult r = run_cli({"profile", "matmul_lnc", "--lnc", "2", "--top", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "matmul_lnc on trn2 (timing profile of 2 cores)")) << r.out;
  EXPECT_TRUE(has(r.out, "chip: 2 physical cores in one logical core (LNC=2)")) << r.out;
  EXPECT_TRUE(has(r.out, "the slowest")) << r.out;
  EXPECT_TRUE(has(r.out, "stack 0 (cores 0, 1)")) << r.out;
  EXPECT_TRUE(has(r.out, "== core 0 (logical core 0, rank 0, HBM stack 0) ==")) << r.out;
  EXPECT_TRUE(has(r.out, "== core 1 (logical core 0, rank 1, HBM stack 0) ==")) << r.out;
  EXPECT_TRUE(has(r.out, "critical path:")) << r.out;

  r = run_cli({"profile", "matmul_lnc", "--cores", "8", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("chip") && j.contains("cores") && j.contains("manifest"));
  const auto& c = j["chip"];
  EXPECT_EQ(c["name"], "trn2");
  EXPECT_EQ(c["cores"], 8);
  EXPECT_EQ(c["lnc"], 2);
  EXPECT_EQ(c["logical_cores"], 4);
  EXPECT_EQ(c["total_ps"].get<int64_t>(), run_total_ps({"--cores", "8"}));
  ASSERT_EQ(j["cores"].size(), 8u);
  int64_t slowest = 0;
  for (const auto& core : j["cores"]) {
    slowest = std::max(slowest, core["total_ps"].get<int64_t>());
    EXPECT_TRUE(core["critical_path"]["released_by"].contains("peer"));
  }
  EXPECT_EQ(c["total_ps"].get<int64_t>(), slowest);
  EXPECT_EQ(j["cores"][c["slowest_core"].get<size_t>()]["total_ps"], c["total_ps"]);
  EXPECT_EQ(c["bound"]["core"], c["slowest_core"]);
  EXPECT_EQ(c["stacks"].size(), 4u);
  EXPECT_EQ(c["per_core"].size(), 8u);
  EXPECT_EQ(j["manifest"]["cores"], 8);
  EXPECT_TRUE(j["manifest"]["lnc"].is_null());
}

TEST(ProfileChip, WithoutTheOptionsTheProfileIsOfOneCore) {
  const CliResult r = run_cli({"profile", "matmul_lnc", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["chip"], "trn2");
  EXPECT_FALSE(j.contains("cores"));
  EXPECT_FALSE(j["manifest"].contains("lnc"));
  EXPECT_FALSE(j["manifest"].contains("cores"));
  const CliResult t = run_cli({"profile", "matmul_lnc"});
  EXPECT_TRUE(t.out.starts_with("matmul_lnc on trn2 (timing profile)\ntotal time: ")) << t.out;
}

TEST(ProfileChip, BadCoreCountsNameTheOption) {
  CliResult r = run_cli({"profile", "matmul_lnc", "--lnc", "3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--lnc")) << r.err;
  r = run_cli({"profile", "matmul_lnc", "--cores", "9"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--cores")) << r.err;
  r = run_cli({"profile", "matmul_lnc", "--cores", "3", "--lnc", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--lnc")) << r.err;
}

}  // namespace
}  // namespace trnsim::cli
