// RoPE frequencies (graph/rope.h) and config.json's rope_scaling: Llama 3.1's "llama3"
// rescaling against values computed with transformers' _compute_llama3_parameters (torch,
// fp32) for theta 500000 and head_dim 128, and "linear" as interpolation.
#include "graph/rope.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "graph/model_config.h"

namespace trnsim::graph {
namespace {

TEST(Rope, Llama31FrequenciesMatchTransformers) {
  const ModelConfig m = load_model_config("llama-3.1-8b");
  EXPECT_EQ(m.rope_scaling.type, "llama3");
  EXPECT_DOUBLE_EQ(m.rope_scaling.factor, 8.0);
  EXPECT_EQ(m.rope_scaling.original_max_positions, 8192);
  const std::vector<double> inv = rope_inv_freq(m.rope_theta, m.head_dim, m.rope_scaling);
  ASSERT_EQ(inv.size(), 64U);
  // Index, transformers' frequency: short wavelengths kept, long ones / 8, 29-34 blended.
  const std::pair<size_t, double> want[] = {{0, 1.0},
                                            {20, 0.016560440883040428},
                                            {29, 0.0021665706299245358},
                                            {31, 0.0008567514596506953},
                                            {34, 0.0001785077911335975},
                                            {40, 3.428102354519069e-05},
                                            {63, 3.068925877869333e-07}};
  for (const auto& [i, f] : want) EXPECT_NEAR(inv[i] / f, 1.0, 1e-6) << "index " << i;
  // Without the rescaling, index 40 is 8x larger.
  const std::vector<double> plain = rope_inv_freq(m.rope_theta, m.head_dim, {});
  EXPECT_NEAR(plain[40] / 0.00027424818836152554, 1.0, 1e-6);
}

TEST(Rope, LinearDividesEveryFrequency) {
  RopeScaling s;
  s.type = "linear";
  s.factor = 4;
  const auto plain = rope_inv_freq(10000.0, 64, {}), lin = rope_inv_freq(10000.0, 64, s);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_DOUBLE_EQ(lin[i], plain[i] / 4);
}

TEST(Rope, ScalingTypesThatMoveWithTheSequenceAreKeptButNotComputed) {
  const ModelConfig m = load_model_config("gpt-oss-120b");
  EXPECT_EQ(m.rope_scaling.type, "yarn");
  EXPECT_FALSE(m.rope_scaling.changes_frequencies_only());
  EXPECT_THROW(rope_inv_freq(m.rope_theta, m.head_dim, m.rope_scaling), InternalError);
}

}  // namespace
}  // namespace trnsim::graph
