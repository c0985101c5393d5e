// memset, iota, select and affine_select.
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AluOp;
using isa::Engine;
using isa::Opcode;

class FillTest : public ::testing::TestWithParam<num::Format> {};

TEST_P(FillTest, MemsetRoundsThroughFp32) {
  const num::Format f = GetParam();
  Harness h;
  const auto d = sbuf(f, 0, 128, 64, {2, 7});
  isa::Params p;
  p.value = 3.14159265358979;
  ASSERT_TRUE(h.run(make(Opcode::kMemset, Engine::kGpSimd, {d}, p)));
  for (double v : h.get(d)) ASSERT_TRUE(same(v, fp32_then(f, p.value)));
}

TEST_P(FillTest, IotaAffineValues) {
  const num::Format f = GetParam();
  Harness h;
  const auto d = sbuf(f, 32, 32, 0, {3, 4});
  isa::Params p;
  p.iota_base = -5;
  p.channel_multiplier = 3;
  ASSERT_TRUE(h.run(make(Opcode::kIota, Engine::kGpSimd, {d}, p)));
  const auto out = h.get(d);
  for (int r = 0; r < 32; ++r)
    for (int i = 0; i < 12; ++i)
      ASSERT_TRUE(same(out[static_cast<size_t>(r * 12 + i)], fp32_then(f, -5 + 3 * r + i)));
}

TEST_P(FillTest, SelectAndAffineSelect) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(2);
  const auto pred = sbuf(num::int_format(num::Dtype::kUint8), 0, 32, 0, {16});
  const auto t = sbuf(f, 0, 32, 64, {16}), e = sbuf(f, 0, 32, 128, {16});
  const auto d = sbuf(f, 0, 32, 256, {16});
  std::vector<double> vp(32 * 16);
  for (double& x : vp) x = static_cast<double>(rng.next() % 3);
  const auto vt = rng.values(f, 32 * 16, 5), ve = rng.values(f, 32 * 16, 5);
  h.put(pred, vp);
  h.put(t, vt);
  h.put(e, ve);
  ASSERT_TRUE(h.run(make(Opcode::kSelect, Engine::kVector, {d, pred, t, e})));
  auto out = h.get(d);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_TRUE(same(out[i], vp[i] != 0 ? vt[i] : ve[i]));
  // Causal mask: keep on_true where i - p >= 0.
  isa::Params p;
  p.op0 = AluOp::kIsGe;
  p.channel_multiplier = -1;
  p.value = -30000.0;
  ASSERT_TRUE(h.run(make(Opcode::kAffineSelect, Engine::kGpSimd, {d, t}, p)));
  out = h.get(d);
  for (int r = 0; r < 32; ++r)
    for (int i = 0; i < 16; ++i) {
      const size_t k = static_cast<size_t>(r * 16 + i);
      ASSERT_TRUE(same(out[k], i - r >= 0 ? vt[k] : fp32_then(f, -30000.0))) << r << "," << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, FillTest, ::testing::ValuesIn(float_formats()),
                         [](const auto& info) { return info.param.name(); });

TEST(Fill, IntegerDestinationsAreExact) {
  Harness h;
  const num::Format i32 = num::int_format(num::Dtype::kInt32);
  const auto d = sbuf(i32, 0, 2, 0, {3});
  isa::Params p;
  p.value = 2147483000.0;  // not an FP32 value
  ASSERT_TRUE(h.run(make(Opcode::kMemset, Engine::kVector, {d}, p)));
  for (double v : h.get(d)) EXPECT_EQ(v, 2147483000.0);
  isa::Params q;
  q.iota_base = 0x7FFFFFF0;
  q.channel_multiplier = 16;
  ASSERT_TRUE(h.run(make(Opcode::kIota, Engine::kGpSimd, {d}, q)));
  const auto v = h.get(d);
  EXPECT_EQ(v[0], 2147483632.0);
  EXPECT_EQ(v[2], 2147483634.0);
  EXPECT_EQ(v[3], -2147483648.0);  // row 1: 0x7FFFFFF0 + 16 wraps in 32 bits
}

}  // namespace
}  // namespace trnsim::core::testing
