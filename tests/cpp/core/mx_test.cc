// NC-v4 quantize_mx and matmul_mx: the block layout (8 partitions x 4 packed elements, scales
// in the first 4 partitions of each quadrant) checked against the numerics layer's block
// quantiser and dequantiser applied by the test, and the MX matmul against a naive
// re-implementation of the documented order over dequantised values.
#include "numerics/mx.h"

#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

int64_t scale_row(int64_t p) { return 32 * (p / 32) + (p % 32) / 8; }

TEST(QuantizeMx, LayoutAndScaleRule) {
  for (num::Format elem : {num::fp8_e4m3fn(), num::fp8_e5m2()}) {
    Harness h(4);
    Rng rng(40);
    const int64_t P = 64, F = 32;
    const auto src = sbuf(num::bf16(), 0, P, 0, {F});
    const auto dst = sbuf(elem, 0, P, 256, {F});
    const auto sc = sbuf(num::e8m0(), 0, P, 512, {F / 4});
    std::vector<double> v = rng.values(num::bf16(), P * F, 100);
    for (int64_t i = 8; i < 16; ++i)  // block 1 of group 0 is all zero
      for (int64_t j = 0; j < 4; ++j) v[static_cast<size_t>(i * F + j)] = 0;
    h.put(src, v);
    h.put_codes(sc, std::vector<uint64_t>(P * F / 4, 0x55));  // rows outside the layout keep it
    ASSERT_TRUE(h.run(make(Opcode::kQuantizeMx, Engine::kVector, {dst, sc, src})))
        << h.faults().to_string();
    const auto e = h.get_codes(dst), s = h.get_codes(sc);
    for (int64_t b = 0; b < P / 8; ++b)
      for (int64_t g = 0; g < F / 4; ++g) {
        float block[32];
        for (int64_t i = 0; i < 8; ++i)
          for (int64_t j = 0; j < 4; ++j)
            block[i * 4 + j] =
                static_cast<float>(v[static_cast<size_t>((8 * b + i) * F + 4 * g + j)]);
        uint8_t want_e[32], want_s;
        num::quantize_mx(block, 32, elem, num::MxScaleRule::kTrainium, {}, want_e, &want_s);
        EXPECT_EQ(s[static_cast<size_t>(scale_row(8 * b) * (F / 4) + g)], want_s);
        for (int64_t i = 0; i < 8; ++i)
          for (int64_t j = 0; j < 4; ++j)
            ASSERT_EQ(e[static_cast<size_t>((8 * b + i) * F + 4 * g + j)], want_e[i * 4 + j]);
      }
    EXPECT_EQ(s[static_cast<size_t>(4 * (F / 4))], 0x55u);  // partition 4: not a scale row
    EXPECT_EQ(s[static_cast<size_t>(1 * (F / 4))], 0u);     // block 1 is zero: 2^-127 = code 0
  }
  Harness v3(3);
  EXPECT_FALSE(
      v3.run(make(Opcode::kQuantizeMx, Engine::kVector,
                  {sbuf(num::fp8_e4m3fn(), 0, 32, 0, {4}), sbuf(num::e8m0(), 0, 32, 64, {1}),
                   sbuf(num::bf16(), 0, 32, 128, {4})})));
}

TEST(MatmulMx, DequantisedProductInDocumentedOrder) {
  Harness h(4);
  Rng rng(41);
  const int64_t P = 64, M = 16, N = 24, K = 4 * P;
  const num::Format fs = num::fp8_e4m3fn(), fm = num::fp4_e2m1();
  const auto stat = sbuf(fs, 0, P, 0, {M * 4}), mov = sbuf(fm, 0, P, 256, {N * 4});
  const auto ss = sbuf(num::e8m0(), 0, P, 512, {M});
  const auto ms = sbuf(num::int_format(num::Dtype::kUint8), 0, P, 600, {N});  // legacy spelling
  const auto dst = psum(num::fp32(), 0, M, 0, {N});
  std::vector<uint64_t> se(static_cast<size_t>(P * M * 4)), me(static_cast<size_t>(P * N * 4));
  for (auto& c : se) c = rng.next() % 0x7F | (rng.next() & 0x80);  // no NaN (0x7F / 0xFF)
  for (auto& c : me) c = rng.next() % 16;
  std::vector<uint64_t> ssc(static_cast<size_t>(P * M)), msc(static_cast<size_t>(P * N));
  for (auto& c : ssc) c = 120 + rng.next() % 15;
  for (auto& c : msc) c = 120 + rng.next() % 15;
  h.put_codes(stat, se);
  h.put_codes(mov, me);
  h.put_codes(ss, ssc);
  h.put_codes(ms, msc);
  ASSERT_TRUE(h.run(make(Opcode::kMatmulMx, Engine::kTensor, {dst, stat, mov, ss, ms})))
      << h.faults().to_string();
  // w[k][m], k = 4p + j.
  std::vector<double> w(static_cast<size_t>(K * M)), x(static_cast<size_t>(K * N));
  for (int64_t p = 0; p < P; ++p)
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t m = 0; m < M; ++m)
        w[static_cast<size_t>((4 * p + j) * M + m)] =
            num::decode(fs, se[static_cast<size_t>(p * M * 4 + 4 * m + j)]) *
            std::ldexp(1.0, static_cast<int>(ssc[static_cast<size_t>(scale_row(p) * M + m)]) - 127);
      for (int64_t n = 0; n < N; ++n)
        x[static_cast<size_t>((4 * p + j) * N + n)] =
            num::decode(fm, me[static_cast<size_t>(p * N * 4 + 4 * n + j)]) *
            std::ldexp(1.0, static_cast<int>(msc[static_cast<size_t>(scale_row(p) * N + n)]) - 127);
    }
  const auto out = h.get(dst);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float prod = static_cast<float>(w[static_cast<size_t>(k * M + m)]) *
                           static_cast<float>(x[static_cast<size_t>(k * N + n)]);
        acc = acc + prod;
      }
      ASSERT_TRUE(same(out[static_cast<size_t>(m * N + n)], acc)) << m << "," << n;
    }
  Harness v3(3);
  EXPECT_FALSE(v3.run(make(Opcode::kMatmulMx, Engine::kTensor, {dst, stat, mov, ss, ms})));
  EXPECT_EQ(v3.faults()[0].kind, mem::FaultKind::kUnsupported);
}

}  // namespace
}  // namespace trnsim::core::testing
