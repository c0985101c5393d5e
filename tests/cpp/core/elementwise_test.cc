// tensor_tensor, tensor_scalar, scalar_tensor_tensor, tensor_copy and reciprocal against
// references computed in double and rounded by numerics' encode() (FP32 first, then the
// destination format: the engines compute in FP32 and cast out). Exact where the semantics are
// exact, which for these ops is everywhere: +, -, *, / computed in double and rounded once to
// FP32 are correctly rounded (double has more than 2 x 24 + 2 bits).
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AluOp;
using isa::Engine;
using isa::Opcode;

class ElementwiseTest : public ::testing::TestWithParam<num::Format> {};

TEST_P(ElementwiseTest, TensorTensorMatchesDoubleReference) {
  const num::Format f = GetParam();
  const double range = f.storage_bytes == 1 ? 8 : 100;
  for (AluOp op : {AluOp::kAdd, AluOp::kSubtract, AluOp::kMult, AluOp::kDivide, AluOp::kMax,
                   AluOp::kMin, AluOp::kIsGe, AluOp::kAbsMax}) {
    Harness h;
    Rng rng(static_cast<uint64_t>(op) * 7 + f.storage_bytes);
    const auto a = sbuf(f, 0, 32, 0, {4, 16}), b = sbuf(f, 0, 32, 256, {64});
    const auto d = psum(f, 32, 32, 0, {64});  // VectorE may write PSUM
    const auto va = rng.values(f, 32 * 64, range), vb = rng.values(f, 32 * 64, range);
    h.put(a, va);
    h.put(b, vb);
    isa::Params p;
    p.op0 = op;
    ASSERT_TRUE(h.run(make(Opcode::kTensorTensor, Engine::kVector, {d, a, b}, p)))
        << h.faults().to_string();
    const auto out = h.get(d);
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_TRUE(same(out[i], fp32_then(f, ref_alu(op, va[i], vb[i]))))
          << f.name() << " op " << int(op) << " i=" << i << ": " << va[i] << ", " << vb[i] << " -> "
          << out[i];
  }
}

TEST_P(ElementwiseTest, TensorScalarImmediatesColumnsAndReverse) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(11);
  const auto x = sbuf(f, 0, 64, 0, {40});
  const auto col = sbuf(num::fp32(), 0, 64, 4096, {1});
  const auto d = sbuf(f, 64, 64, 8192, {40});
  const auto vx = rng.values(f, 64 * 40, 4);
  const auto vc = rng.values(num::fp32(), 64, 4);
  h.put(x, vx);
  h.put(col, vc);
  isa::Params p;
  p.op0 = AluOp::kSubtract;
  p.arg0 = {0, 2};    // the [P, 1] column in operand 2
  p.reverse0 = true;  // arg0 - x
  p.op1 = AluOp::kMult;
  p.arg1 = {1.5f, -1};
  ASSERT_TRUE(h.run(make(Opcode::kTensorScalar, Engine::kScalar, {d, x, col}, p)))
      << h.faults().to_string();
  const auto out = h.get(d);
  for (int r = 0; r < 64; ++r)
    for (int i = 0; i < 40; ++i) {
      const size_t k = static_cast<size_t>(r * 40 + i);
      const double t = round_to(num::fp32(), vc[static_cast<size_t>(r)] - vx[k]);
      ASSERT_TRUE(same(out[k], fp32_then(f, t * 1.5))) << r << "," << i;
    }
}

TEST_P(ElementwiseTest, ScalarTensorTensor) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(5);
  const auto a = sbuf(f, 0, 128, 0, {30}), b = sbuf(f, 0, 128, 1024, {30});
  const auto d = sbuf(num::fp32(), 0, 128, 2048, {30});
  const auto va = rng.values(f, 128 * 30, 3), vb = rng.values(f, 128 * 30, 3);
  h.put(a, va);
  h.put(b, vb);
  isa::Params p;
  p.op0 = AluOp::kMult;
  p.arg0 = {0.75f, -1};
  p.op1 = AluOp::kAdd;
  ASSERT_TRUE(h.run(make(Opcode::kScalarTensorTensor, Engine::kVector, {d, a, b}, p)));
  const auto out = h.get(d);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_TRUE(same(out[i], round_to(num::fp32(), round_to(num::fp32(), va[i] * 0.75) + vb[i])));
}

TEST_P(ElementwiseTest, CopyCastAndReciprocal) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(9);
  const auto src = sbuf(num::fp32(), 0, 32, 0, {50});
  const auto d = sbuf(f, 32, 32, 0, {50}), r = sbuf(f, 64, 32, 0, {50});
  const auto v = rng.values(num::fp32(), 32 * 50, 20);
  h.put(src, v);
  ASSERT_TRUE(h.run(make(Opcode::kTensorCopy, Engine::kGpSimd, {d, src})));
  ASSERT_TRUE(h.run(make(Opcode::kReciprocal, Engine::kVector, {r, src})));
  const auto out = h.get(d), rec = h.get(r);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(same(out[i], round_to(f, v[i])));
    ASSERT_TRUE(same(rec[i], fp32_then(f, 1.0 / v[i])));
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ElementwiseTest, ::testing::ValuesIn(float_formats()),
                         [](const auto& info) { return info.param.name(); });

TEST(Elementwise, SameDtypeCopyIsBitExactForInt32) {
  Harness h;
  const auto s = sbuf(num::int_format(num::Dtype::kInt32), 0, 4, 0, {3});
  const auto d = sbuf(num::int_format(num::Dtype::kInt32), 32, 4, 0, {3});
  std::vector<uint64_t> codes;
  for (uint64_t i = 0; i < 12; ++i) codes.push_back(0x7FFFFFF1u - i * 977);  // > 2^24
  h.put_codes(s, codes);
  ASSERT_TRUE(h.run(make(Opcode::kTensorCopy, Engine::kVector, {d, s})));
  EXPECT_EQ(h.get_codes(d), codes);
  // NC-v2 ScalarE copies through FP32: 2^31 - 15 is not an FP32 value.
  ExecOptions v2;
  v2.scalar_copy_bit_exact = false;
  Harness h2(2, v2);
  h2.put_codes(s, codes);
  ASSERT_TRUE(h2.run(make(Opcode::kTensorCopy, Engine::kScalar, {d, s})));
  EXPECT_NE(h2.get_codes(d), codes);
  EXPECT_EQ(h2.get(d)[0], 2147483647.0);  // 2^31 in FP32, saturated back to int32
}

TEST(Elementwise, BitvecOpsOnIntegersUseBitPatterns) {
  Harness h;
  const num::Format i32 = num::int_format(num::Dtype::kInt32);
  const num::Format u16 = num::int_format(num::Dtype::kUint16);
  const auto a = sbuf(i32, 0, 2, 0, {2}), b = sbuf(i32, 0, 2, 64, {2});
  const auto d = sbuf(u16, 0, 2, 128, {2});
  h.put_codes(a, {0x7F0F0F0Fu, 0xFFFFFFFFu, 0x12345678u, 0x80000001u});
  h.put_codes(b, {0x0FF00FF0u, 0x0000FFFFu, 0xFFFF0000u, 0x00000003u});
  isa::Params p;
  p.op0 = AluOp::kBitwiseXor;
  ASSERT_TRUE(h.run(make(Opcode::kTensorTensor, Engine::kVector, {d, a, b}, p)));
  EXPECT_EQ(h.get_codes(d), (std::vector<uint64_t>{0x00FFu, 0x0000u, 0x5678u, 0x0002u}));
  // tensor_scalar shift on int32 keeps all 32 bits.
  const auto d32 = sbuf(i32, 0, 2, 256, {2});
  isa::Params s;
  s.op0 = AluOp::kShiftRightLogical;
  s.arg0 = {4.0f, -1};
  s.op1 = AluOp::kBitwiseAnd;
  s.arg1 = {65535.0f, -1};
  ASSERT_TRUE(h.run(make(Opcode::kTensorScalar, Engine::kVector, {d32, a}, s)));
  EXPECT_EQ(h.get_codes(d32), (std::vector<uint64_t>{0xF0F0u, 0xFFFFu, 0x4567u, 0x0000u}));
}

TEST(Elementwise, GpSimdInt32ArithmeticIsExact) {
  // GpSimd's integer SIMD: 32-bit integer tiles add, multiply, compare exactly (wrapping);
  // VectorE computes the same add in FP32 and loses the low bits above 2^24.
  const num::Format i32 = num::int_format(num::Dtype::kInt32);
  const num::Format u32 = num::int_format(num::Dtype::kUint32);
  struct Case {
    num::Format f;
    AluOp op;
    std::vector<uint64_t> want;
  };
  const std::vector<uint64_t> a{16777217u, 0xFFFFFFFFu, 0x80000000u, 7u};
  const std::vector<uint64_t> b{1u, 1u, 0x7FFFFFFFu, 0xFFFFFFF9u};
  for (const Case& c :
       {Case{i32, AluOp::kAdd, {16777218u, 0u, 0xFFFFFFFFu, 0u}},
        Case{i32, AluOp::kMult, {16777217u, 0xFFFFFFFFu, 0x80000000u, 0xFFFFFFCFu}},
        Case{i32, AluOp::kMax, {16777217u, 1u, 0x7FFFFFFFu, 7u}},
        Case{u32, AluOp::kMax, {16777217u, 0xFFFFFFFFu, 0x80000000u, 0xFFFFFFF9u}},
        Case{i32, AluOp::kIsGt, {1u, 0u, 0u, 1u}}, Case{u32, AluOp::kIsGt, {1u, 1u, 1u, 0u}}}) {
    Harness h;
    const auto x = sbuf(c.f, 0, 2, 0, {2}), y = sbuf(c.f, 0, 2, 64, {2});
    const auto d = sbuf(c.f, 0, 2, 128, {2});
    h.put_codes(x, a);
    h.put_codes(y, b);
    isa::Params p;
    p.op0 = c.op;
    ASSERT_TRUE(h.run(make(Opcode::kTensorTensor, Engine::kGpSimd, {d, x, y}, p)))
        << h.faults().to_string();
    EXPECT_EQ(h.get_codes(d), c.want) << c.f.name() << " op " << int(c.op);
  }
  Harness h;
  const auto x = sbuf(i32, 0, 2, 0, {2}), y = sbuf(i32, 0, 2, 64, {2});
  const auto d = sbuf(i32, 0, 2, 128, {2});
  h.put_codes(x, a);
  h.put_codes(y, b);
  isa::Params p;
  p.op0 = AluOp::kAdd;
  ASSERT_TRUE(h.run(make(Opcode::kTensorTensor, Engine::kVector, {d, x, y}, p)));
  EXPECT_EQ(h.get_codes(d)[0], 16777216u);  // FP32: 16777217 + 1 rounds to 2^24
}

TEST(Elementwise, NanPropagatesThroughMax) {
  Harness h;
  const auto a = sbuf(num::fp32(), 0, 1, 0, {2}), b = sbuf(num::fp32(), 0, 1, 64, {2});
  const auto d = sbuf(num::fp32(), 0, 1, 128, {2});
  h.put(a, {std::nan(""), 1.0});
  h.put(b, {2.0, std::nan("")});
  isa::Params p;
  p.op0 = AluOp::kMax;
  ASSERT_TRUE(h.run(make(Opcode::kTensorTensor, Engine::kVector, {d, a, b}, p)));
  for (double v : h.get(d)) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace trnsim::core::testing
