// TensorE matmul: bit-exact against an independent naive re-implementation of the documented
// order (products rounded to FP32, sums from +0 in k order, each add rounded), within the
// classical error bound of a naive fp64 reference, and the PSUM accumulation groups.
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AccumulateFlag;
using isa::Engine;
using isa::Opcode;

// The documented order, written as plainly as possible (the library's kernel is blocked).
std::vector<float> naive(const std::vector<double>& w, const std::vector<double>& x, int64_t K,
                         int64_t M, int64_t N) {
  std::vector<float> out(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        const float prod = static_cast<float>(w[static_cast<size_t>(k * M + m)]) *
                           static_cast<float>(x[static_cast<size_t>(k * N + n)]);
        acc = acc + prod;
      }
      out[static_cast<size_t>(m * N + n)] = acc;
    }
  return out;
}

isa::Params tile(int row = 0, int col = 0, int rows = 128, int cols = 128) {
  isa::Params p;
  p.tile_row = static_cast<int16_t>(row);
  p.tile_col = static_cast<int16_t>(col);
  p.tile_rows = static_cast<int16_t>(rows);
  p.tile_cols = static_cast<int16_t>(cols);
  return p;
}

class MatmulTest : public ::testing::TestWithParam<num::Format> {};

TEST_P(MatmulTest, BitExactToDocumentedOrderAndCloseToFp64) {
  const num::Format f = GetParam();
  const int64_t K = 128, M = 128, N = 512;
  Harness h;
  Rng rng(21);
  const auto stat = sbuf(f, 0, 128, 0, {M});
  const auto mov = sbuf(f, 0, 128, 4096, {N});
  const auto dst = psum(num::fp32(), 0, 128, 2048, {N});  // bank 1
  const auto w = rng.values(f, K * M, 2), x = rng.values(f, K * N, 2);
  h.put(stat, w);
  h.put(mov, x);
  ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {stat}, tile())))
      << h.faults().to_string();
  ASSERT_TRUE(h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, tile())))
      << h.faults().to_string();
  const auto out = h.get(dst);
  const auto want = naive(w, x, K, M, N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = static_cast<size_t>(m * N + n);
      ASSERT_TRUE(same(out[i], want[i])) << f.name() << " m=" << m << " n=" << n;
      double exact = 0, mag = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double p = w[static_cast<size_t>(k * M + m)] * x[static_cast<size_t>(k * N + n)];
        exact += p;
        mag += std::fabs(p);
      }
      // |error| <= gamma_K * sum |p| (naive summation, plus product rounding for fp32 inputs).
      ASSERT_LE(std::fabs(out[i] - exact), (K + 1) * 0x1p-24 * mag);
    }
}

TEST_P(MatmulTest, AccumulationGroupInPsum) {
  const num::Format f = GetParam();
  const int64_t K = 64, M = 32, N = 40;
  Harness h;
  Rng rng(22);
  const auto dst = psum(num::fp32(), 32, 32, 0, {N});
  std::vector<float> want(static_cast<size_t>(M * N), 0.0f);
  const AccumulateFlag flags[] = {AccumulateFlag::kFirst, AccumulateFlag::kMiddle,
                                  AccumulateFlag::kMiddle, AccumulateFlag::kLast};
  for (int step = 0; step < 4; ++step) {
    const auto stat = sbuf(f, 0, 64, 0, {M}), mov = sbuf(f, 0, 64, 1024, {N});
    const auto w = rng.values(f, K * M, 1), x = rng.values(f, K * N, 1);
    h.put(stat, w);
    h.put(mov, x);
    auto p = tile(64, 32, 64, 32);  // a 64x32 tile in the middle of the array
    ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {stat}, p)));
    p.acc = flags[step];
    ASSERT_TRUE(h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, p)))
        << h.faults().to_string();
    const auto r = naive(w, x, K, M, N);
    for (size_t i = 0; i < want.size(); ++i) want[i] = step == 0 ? r[i] : want[i] + r[i];
  }
  const auto out = h.get(dst);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_TRUE(same(out[i], want[i])) << i;
}

INSTANTIATE_TEST_SUITE_P(Formats, MatmulTest,
                         ::testing::Values(num::fp32(), num::tf32(), num::bf16(), num::fp16(),
                                           num::fp8_e4m3(), num::fp8_e5m2()),
                         [](const auto& info) { return info.param.name(); });

TEST(Matmul, NoFusedMultiplyAdd) {
  // k = 0 puts -(1 + 2^-11) in the accumulator; k = 1 adds (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24,
  // whose FP32 rounding (a tie, to even) is 1 + 2^-11: the documented order gives exactly 0,
  // an FMA would give 2^-24. M = 4, N = 16 also runs the library's blocked path.
  Harness h;
  const double a = 1 + 0x1p-12, c = -(1 + 0x1p-11);
  const auto stat = sbuf(num::fp32(), 0, 2, 0, {4}), mov = sbuf(num::fp32(), 0, 2, 64, {16});
  const auto dst = psum(num::fp32(), 0, 4, 0, {16});
  h.put(stat, {1, 1, 1, 1, a, a, a, a});
  std::vector<double> x(32);
  for (int n = 0; n < 16; ++n) x[static_cast<size_t>(n)] = c, x[static_cast<size_t>(16 + n)] = a;
  h.put(mov, x);
  ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {stat}, tile())));
  ASSERT_TRUE(h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, tile())));
  for (double v : h.get(dst)) ASSERT_TRUE(same(v, 0.0)) << v;
}

TEST(Matmul, DisjointTilesCoexistAndOverlapEvicts) {
  Harness h;
  const auto s0 = sbuf(num::bf16(), 0, 32, 0, {32}), s1 = sbuf(num::bf16(), 32, 32, 0, {32});
  const auto mov = sbuf(num::bf16(), 0, 32, 256, {8});
  const auto dst = psum(num::fp32(), 0, 32, 0, {8});
  h.put(s0, std::vector<double>(32 * 32, 1.0));
  h.put(s1, std::vector<double>(32 * 32, 2.0));
  h.put(mov, std::vector<double>(32 * 8, 1.0));
  ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {s0}, tile(0, 0, 32, 32))));
  ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {s1}, tile(32, 0, 32, 32))));
  ASSERT_TRUE(
      h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, tile(0, 0, 32, 32))));
  EXPECT_EQ(h.get(dst)[0], 32.0);
  ASSERT_TRUE(
      h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, tile(32, 0, 32, 32))));
  EXPECT_EQ(h.get(dst)[0], 64.0);
  // A 64-row tile at row 0 overlaps both: neither survives.
  const auto s2 = sbuf(num::bf16(), 0, 64, 512, {32});
  ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {s2}, tile(0, 0, 64, 32))));
  EXPECT_FALSE(
      h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, tile(32, 0, 32, 32))));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kNoStationary);
}

TEST(Matmul, DoubleRowFp8OnNcV3) {
  Harness h(3);
  Rng rng(30);
  const int64_t M = 64, N = 100;
  auto stat = sbuf(num::fp8_e4m3(), 0, 128, 0, {2, M}),
       mov = sbuf(num::fp8_e5m2(), 0, 128, 512, {2, N});
  const auto dst = psum(num::fp32(), 0, M, 0, {N});
  const auto w = rng.values(num::fp8_e4m3(), 128 * 2 * M, 4),
             x = rng.values(num::fp8_e5m2(), 128 * 2 * N, 4);
  h.put(stat, w);
  h.put(mov, x);
  auto p = tile();
  p.perf_mode = isa::MatmulPerfMode::kDoubleRowFp8;
  ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {stat}, p)))
      << h.faults().to_string();
  ASSERT_TRUE(h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, p)))
      << h.faults().to_string();
  // K = 256: row k = half * 128 + partition.
  std::vector<double> wk(static_cast<size_t>(256 * M)), xk(static_cast<size_t>(256 * N));
  for (int64_t half = 0; half < 2; ++half)
    for (int64_t pt = 0; pt < 128; ++pt) {
      for (int64_t m = 0; m < M; ++m)
        wk[static_cast<size_t>((half * 128 + pt) * M + m)] =
            w[static_cast<size_t>(pt * 2 * M + half * M + m)];
      for (int64_t n = 0; n < N; ++n)
        xk[static_cast<size_t>((half * 128 + pt) * N + n)] =
            x[static_cast<size_t>(pt * 2 * N + half * N + n)];
    }
  const auto want = naive(wk, xk, 256, M, N);
  const auto out = h.get(dst);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_TRUE(same(out[i], want[i])) << i;
  Harness v2(2);
  v2.put(stat, w);
  EXPECT_FALSE(v2.run(make(Opcode::kLoadStationary, Engine::kTensor, {stat}, p)));
}

TEST(Matmul, Bf16PsumOnNcV4RoundsEachAccumulation) {
  Harness h(4);
  Rng rng(31);
  const auto stat = sbuf(num::bf16(), 0, 128, 0, {16}), mov = sbuf(num::bf16(), 0, 128, 64, {1000});
  const auto dst = psum(num::bf16(), 0, 16, 0, {1000});  // N = 1000 > 512: v4 allows it
  const auto w = rng.values(num::bf16(), 128 * 16, 1), x = rng.values(num::bf16(), 128 * 1000, 1);
  h.put(stat, w);
  h.put(mov, x);
  auto p = tile();
  ASSERT_TRUE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {stat}, p)));
  ASSERT_TRUE(h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, p)))
      << h.faults().to_string();
  p.acc = AccumulateFlag::kLast;
  ASSERT_TRUE(h.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, p)));
  const auto r = naive(w, x, 128, 16, 1000);
  const auto out = h.get(dst);
  for (size_t i = 0; i < r.size(); ++i) {
    const double first = round_to(num::bf16(), r[i]);
    ASSERT_TRUE(same(out[i], round_to(num::bf16(), round_to(num::fp32(), first + r[i])))) << i;
  }
  Harness v3(3);
  EXPECT_FALSE(v3.run(make(Opcode::kMultiplyMoving, Engine::kTensor, {dst, mov}, tile())));
}

}  // namespace
}  // namespace trnsim::core::testing
