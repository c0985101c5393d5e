// The example registry: every kernel is there, builds on every generation from small
// arguments and is race-free there (core/race/race_check.h), and bad names or arguments are
// InputErrors.
#include "kernels/registry.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "core/race/race_check.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

TEST(Registry, EveryExampleIsRegistered) {
  for (const char* name :
       {"matmul_tiled", "matmul_hoisted", "matmul_blocked", "matmul_fully_optimized", "softmax",
        "layernorm", "rmsnorm", "attention", "matmul_lnc"})
    EXPECT_NE(examples::find_kernel(name), nullptr) << name;
  EXPECT_EQ(examples::kernel_registry().size(), 9u);
  const examples::KernelEntry* full = examples::find_kernel("matmul_fully_optimized");
  ASSERT_EQ(full->params.size(), 6u);
  EXPECT_EQ(full->params[0].default_value, 4096);  // VALIDATION.md s2
  EXPECT_EQ(full->params[1].default_value, 8192);
  EXPECT_EQ(full->params[2].default_value, 8192);
  EXPECT_NE(examples::describe_kernels().find("attention(seq=2048"), std::string::npos);
}

TEST(Registry, BuildsSmallShapesOnEveryGeneration) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> small{
      {"matmul_tiled", {128, 128, 512}},
      {"matmul_hoisted", {128, 128, 512}},
      {"matmul_blocked", {256, 128, 1024}},
      {"matmul_fully_optimized", {256, 256, 1024, 2, 2, 2}},
      {"softmax", {128, 64}},
      {"layernorm", {128, 64}},
      {"rmsnorm", {128, 64}},
      {"attention", {256, 64, 1}},
      {"matmul_lnc", {128, 256, 512}}};
  for (const std::string& g : kGenerations)
    for (const auto& [name, args] : small) {
      SCOPED_TRACE(g + " " + name);
      const isa::Program p = examples::build_kernel(name, chip(g), args);
      EXPECT_EQ(p.chip, g);
      EXPECT_GT(p.num_instructions(), 0u);
      // Every example synchronises itself: the independent checker finds nothing.
      const core::RaceReport races = core::check_races(p, chip(g), {20000});
      EXPECT_TRUE(races.clean()) << core::format_race_report(races);
    }
}

TEST(Registry, Errors) {
  EXPECT_THROW(examples::build_kernel("nope", chip("trn1")), InputError);
  EXPECT_THROW(examples::build_kernel("softmax", chip("trn1"), {1, 2, 3}), InputError);
  try {
    examples::build_kernel("matmul_tiled", chip("trn1"), {100, 128, 512});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul_tiled: 'm'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trnsim::kernel_test
