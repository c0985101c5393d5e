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
  for (auto [elem, from] :
       {std::pair{num::fp8_e4m3fn(), num::bf16()}, std::pair{num::fp8_e5m2(), num::fp16()}}) {
    Harness h(4);
    Rng rng(40);
    const int64_t P = 64, F = 32;
    const auto src = sbuf(from, 0, P, 0, {F});
    const auto dst = sbuf(elem, 0, P, 256, {F});
    const auto sc = sbuf(num::e8m0(), 0, P, 512, {F / 4});
    std::vector<double> v = rng.values(from, P * F, 100);
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

class MatmulMx : public ::testing::TestWithParam<std::pair<num::Format, num::Format>> {};

TEST_P(MatmulMx, DequantisedProductInDocumentedOrder) {
  Harness h(4);
  Rng rng(41);
  const int64_t P = 64, M = 16, N = 24, K = 4 * P;
  const auto [fs, fm] = GetParam();
  const auto stat = sbuf(fs, 0, P, 0, {M * 4}), mov = sbuf(fm, 0, P, 256, {N * 4});
  const auto ss = sbuf(num::e8m0(), 0, P, 512, {M});
  const auto ms = sbuf(num::int_format(num::Dtype::kUint8), 0, P, 600, {N});  // legacy spelling
  const auto dst = psum(num::fp32(), 0, M, 0, {N});
  std::vector<uint64_t> se(static_cast<size_t>(P * M * 4)), me(static_cast<size_t>(P * N * 4));
  // Random codes that are not NaN (e4m3fn: S.1111.111; e5m2: exponent 11111).
  auto code = [&](const num::Format& f) -> uint64_t {
    for (;;) {
      const uint64_t c = rng.next() & (f.bits == 4 ? 0xF : 0xFF);
      if (!std::isnan(num::decode(f, c)) && !std::isinf(num::decode(f, c))) return c;
    }
  };
  for (auto& c : se) c = code(fs);
  for (auto& c : me) c = code(fm);
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

INSTANTIATE_TEST_SUITE_P(Elements, MatmulMx,
                         ::testing::Values(std::pair{num::fp8_e4m3fn(), num::fp4_e2m1()},
                                           std::pair{num::fp8_e5m2(), num::fp8_e4m3fn()},
                                           std::pair{num::fp4_e2m1(), num::fp8_e5m2()}),
                         [](const auto& info) {
                           return info.param.first.name() + "_x_" + info.param.second.name();
                         });

}  // namespace
}  // namespace trnsim::core::testing
