// Kernels timed together (graph/segment.h, KernelBuilder::begin_kernel): a segment's program
// computes what its kernels compute one after another (its loads of an earlier kernel's output
// wait for that kernel's stores), is race-free, and takes no longer than the kernels apart; a
// fused q/k/v linear feeds attention by columns; outputs that do not fit the input they feed
// are refused when building, and a model run then times the kernels apart.
#include "graph/segment.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "base/error.h"
#include "chip/chip_run.h"
#include "core/exec/functional_runner.h"
#include "core/race/race_check.h"
#include "graph/kernel_cache.h"
#include "graph/model_config.h"
#include "graph/model_run.h"
#include "graph_test_util.h"
#include "kernel/builder.h"

namespace trnsim::graph {
namespace {

constexpr int64_t kTokens = 160, kIn = 256, kOut = 384;  // a partial second token tile

// x -> layernorm -> y1 -> linear (bias, gelu) -> y2: value 0, 1, 2.
struct NormLinear {
  Node norm, linear;
  Kernel nk, lk;
  NormLinear() {
    norm.kind = OpKind::kNorm;
    norm.inputs = {0};
    norm.outputs = {1};
    linear.kind = OpKind::kLinear;
    linear.inputs = {1};
    linear.outputs = {2};
    nk.kind = KernelKind::kNorm;
    nk.norm.tokens = kTokens;
    nk.norm.features = kIn;
    nk.norm.norm = ops::Norm::kLayer;
    lk.kind = KernelKind::kLinear;
    lk.linear.tokens = kTokens;
    lk.linear.in = kIn;
    lk.linear.out = kOut;
    lk.linear.bias = true;
    lk.linear.act = ops::Act::kGelu;
    lk.linear.tiling = {128, 512};
  }
  std::vector<SegmentItem> items() const { return {{&norm, nk}, {&linear, lk}}; }
};

// Multiples of 1/64 in [-scale, scale]: exact in bf16.
std::vector<float> exact(int64_t n, int seed, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(static_cast<int>((i * 37 + static_cast<size_t>(seed) * 101) % 129) -
                              64) /
           64.0f * scale;
  return v;
}

std::vector<float> run_values(const arch::ChipSpec& chip, const isa::Program& p,
                              const std::vector<std::pair<std::string, std::vector<float>>>& in,
                              const std::string& out) {
  core::FunctionalRunner r(chip, p);
  for (const auto& [name, v] : in) r.write_tensor_f32(name, v);
  r.run();
  EXPECT_TRUE(r.faults().empty());
  return r.read_tensor_f32(out);
}

Picoseconds run_time(const arch::ChipSpec& chip, const isa::Program& p) {
  std::vector<const isa::Program*> progs{&p};
  chip::ChipRunner runner(chip, progs, 1, core::RunMode::kTimingOnly);
  const chip::ChipResult r = runner.run();
  EXPECT_TRUE(r.ok()) << r.faults_text();
  return r.total;
}

TEST(Segment, ComputesWhatTheKernelsComputeApart) {
  for (const char* gen : {"trn1", "trn2", "trn3"}) {
    SCOPED_TRACE(gen);
    const arch::ChipSpec chip = arch::load_chip(gen);
    const NormLinear nl;
    const std::vector<float> x = exact(kTokens * kIn, 1, 2.0f), gamma = exact(kIn, 2, 0.5f),
                             beta = exact(kIn, 3, 0.25f), w = exact(kIn * kOut, 4, 1.0f / 16),
                             b = exact(kOut, 5, 0.25f);
    // Apart: the norm's y written to the linear's x on the host.
    const std::vector<float> y1 = run_values(chip, ops::norm(chip, nl.nk.norm),
                                             {{"x", x}, {"gamma", gamma}, {"beta", beta}}, "y");
    const std::vector<float> apart =
        run_values(chip, ops::linear(chip, nl.lk.linear), {{"x", y1}, {"w", w}, {"b", b}}, "y");
    // Together: the linear reads the norm's output tensor; its names carry the kernel's prefix.
    const isa::Program seg = build_segment(chip, nl.items());
    EXPECT_EQ(seg.find_tensor("k1_x"), nullptr);  // bound to k0_y, not a tensor of its own
    ASSERT_NE(seg.find_tensor("k0_y"), nullptr);
    const std::vector<float> together = run_values(
        chip, seg, {{"k0_x", x}, {"k0_gamma", gamma}, {"k0_beta", beta}, {"k1_w", w}, {"k1_b", b}},
        "k1_y");
    const core::RaceReport races = core::check_races(seg, chip, {200000});
    EXPECT_TRUE(races.clean()) << core::format_race_report(races);
    ASSERT_EQ(together.size(), apart.size());
    for (size_t i = 0; i < apart.size(); ++i) ASSERT_EQ(together[i], apart[i]) << "element " << i;
    // The linear's weights load under the norm: together no slower than apart, and faster.
    const Picoseconds t_norm = run_time(chip, ops::norm(chip, nl.nk.norm));
    const Picoseconds t_linear = run_time(chip, ops::linear(chip, nl.lk.linear));
    const Picoseconds t_seg = run_time(chip, seg);
    EXPECT_LT(t_seg, t_norm + t_linear);
    EXPECT_GT(t_seg, std::max(t_norm, t_linear));
  }
}

// q, k and v of attention are columns of the fused linear's y, read where it wrote them.
TEST(Segment, FusedQkvFeedsAttentionByColumns) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  constexpr int64_t S = 128, H = 2, D = 64;
  Node qkv, attn;
  qkv.kind = OpKind::kLinear;
  qkv.inputs = {0};
  qkv.outputs = {1, 2, 3};
  qkv.splits = {H * D, H * D, H * D};
  attn.kind = OpKind::kAttention;
  attn.inputs = {1, 2, 3};
  attn.outputs = {4};
  Kernel lk, ak;
  lk.kind = KernelKind::kLinear;
  lk.linear.tokens = S;
  lk.linear.in = 128;
  lk.linear.out = 3 * H * D;
  lk.linear.tiling = {128, 512};
  ak.kind = KernelKind::kAttention;
  ak.attention.batch = 1;
  ak.attention.seq = S;
  ak.attention.q_heads = H;
  ak.attention.kv_heads = H;
  ak.attention.head_dim = D;
  const std::vector<SegmentItem> items{{&qkv, lk}, {&attn, ak}};
  EXPECT_TRUE(has(segment_key(items), "1.q<-0.y[0:128]"));
  EXPECT_TRUE(has(segment_key(items), "1.v<-0.y[256:384]"));
  const std::vector<float> x = exact(S * 128, 6, 1.0f), w = exact(128 * 3 * H * D, 7, 1.0f / 8);
  const std::vector<float> y =
      run_values(chip, ops::linear(chip, lk.linear), {{"x", x}, {"w", w}}, "y");
  std::vector<float> q, k, v;
  for (int64_t t = 0; t < S; ++t)
    for (int64_t c = 0; c < 3 * H * D; ++c)
      (c < H * D ? q : c < 2 * H * D ? k : v).push_back(y[static_cast<size_t>(t * 3 * H * D + c)]);
  const std::vector<float> apart =
      run_values(chip, ops::attention(chip, ak.attention), {{"q", q}, {"k", k}, {"v", v}}, "out");
  const std::vector<float> together =
      run_values(chip, build_segment(chip, items), {{"k0_x", x}, {"k0_w", w}}, "k1_out");
  ASSERT_EQ(together.size(), apart.size());
  for (size_t i = 0; i < apart.size(); ++i) ASSERT_EQ(together[i], apart[i]) << "element " << i;
}

// An output that does not fit the input it feeds (here a norm over other features) is refused
// by the builder, naming the tensor; the kernel cache then has no time for the pair.
TEST(Segment, MismatchedFeedIsRefused) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  NormLinear nl;
  nl.lk.linear.in = 2 * kIn;
  const InputError e = input_error([&] { (void)build_segment(chip, nl.items()); });
  EXPECT_TRUE(has(e.what(), "input('x')")) << e.what();
  KernelCache cache(chip, 1, nullptr, false);
  EXPECT_EQ(cache.time_segment(nl.items()), nullptr);
  EXPECT_EQ(cache.segments(), 1);
}

// A bound view is the earlier kernel's; other names get the kernel's prefix; kernel_tensor
// names what the current kernel declared.
TEST(Segment, BuilderBindsAndPrefixes) {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  kernel::KernelBuilder kb(chip);
  kb.begin_kernel("a_", {});
  const kernel::Tensor y = kb.output("y", num::bf16(), {128, 64});
  EXPECT_EQ(y.name(), "a_y");
  ASSERT_NE(kb.kernel_tensor("y"), nullptr);
  EXPECT_EQ(kb.kernel_tensor("y")->name(), "a_y");
  kb.begin_kernel("b_", {{"x", y}});
  EXPECT_EQ(kb.input("x", num::bf16(), {128, 64}).name(), "a_y");
  EXPECT_EQ(kb.input("w", num::bf16(), {64, 64}).name(), "b_w");
  EXPECT_EQ(kb.kernel_tensor("y"), nullptr);  // a's, not b's
  kb.begin_kernel("c_", {{"x", y}});
  EXPECT_TRUE(has(input_error([&] {
                    (void)kb.input("x", num::bf16(), {64, 128});
                  }).what(),
                  "is bound to it"));
  EXPECT_TRUE(has(input_error([&] {
                    (void)kb.input("x", num::fp32(), {128, 64});
                  }).what(),
                  "is bound to it"));
  kernel::KernelBuilder other(chip);
  EXPECT_TRUE(has(input_error([&] {
                    other.begin_kernel("d_", {{"x", y}});
                  }).what(),
                  "not bound to an HBM tensor of this program"));
}

// Timed together, a batch-1 encoder's kernels overlap (weights load under the norms and the
// attention): the forward is faster than its kernels apart, each kernel costs at most its time
// alone, and the rows still add up to the latency.
TEST(Segment, ModelRunTimesKernelsTogether) {
  const ModelConfig m = load_model_config("bert-large");
  ModelRunOptions o{.chip = "trn1", .tp = 1, .seq = 128, .layers = 2};
  const ModelResult together = run_model(m, o);
  o.overlap_kernels = false;
  const ModelResult apart = run_model(m, o);
  EXPECT_GT(together.overlap_us, 0);
  EXPECT_EQ(apart.overlap_us, 0);
  EXPECT_LT(together.latency_us, apart.latency_us);
  EXPECT_NEAR(apart.latency_us - together.latency_us, together.overlap_us, 1e-6);
  ASSERT_EQ(together.rows.size(), apart.rows.size());
  double sum = 0;
  for (size_t i = 0; i < apart.rows.size(); ++i) {
    EXPECT_LE(together.rows[i].time_us, apart.rows[i].time_us + 1e-9) << apart.rows[i].name;
    sum += together.rows[i].total_us();
  }
  EXPECT_NEAR(sum + together.launch_us, together.latency_us, 1e-6);
  EXPECT_TRUE(has(together.table(), "kernels together:"));
}

}  // namespace
}  // namespace trnsim::graph
