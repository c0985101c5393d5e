// transpose_pe (bit-exact and identity-matmul paths), transpose_dve and dma_transpose.
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

std::vector<uint64_t> transposed(const std::vector<uint64_t>& c, int64_t rows, int64_t cols) {
  std::vector<uint64_t> t(c.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      t[static_cast<size_t>(k * rows + r)] = c[static_cast<size_t>(r * cols + k)];
  return t;
}

std::vector<uint64_t> random_codes(Rng& rng, size_t n, int bytes) {
  std::vector<uint64_t> c(n);
  for (auto& x : c) x = rng.next() & ((uint64_t{1} << (8 * bytes)) - 1);
  return c;
}

TEST(TransposePe, BitExactOnNcV3KeepsNaNPayloadsAndNegativeZero) {
  for (num::Format f : {num::bf16(), num::fp16(), num::fp32()}) {
    Harness h(3);
    Rng rng(1);
    const auto src = sbuf(f, 0, 128, 0, {96});
    const auto dst = psum(f, 0, 96, 0, {128});
    const auto codes = random_codes(rng, 128 * 96, f.storage_bytes);  // NaNs, -0 and all
    h.put_codes(src, codes);
    isa::Params p;
    p.transpose = true;
    ASSERT_TRUE(h.run(make(Opcode::kTransposePe, Engine::kTensor, {dst, src}, p)))
        << h.faults().to_string();
    EXPECT_EQ(h.get_codes(dst), transposed(codes, 128, 96)) << f.name();
  }
  // fp8 gives 16-bit outputs with the upper byte zero.
  Harness h(3);
  Rng rng(2);
  const auto src = sbuf(num::fp8_e4m3(), 0, 64, 0, {32});
  const auto dst = psum(num::bf16(), 0, 32, 0, {64});
  const auto codes = random_codes(rng, 64 * 32, 1);
  h.put_codes(src, codes);
  isa::Params p;
  p.transpose = true;
  ASSERT_TRUE(h.run(make(Opcode::kTransposePe, Engine::kTensor, {dst, src}, p)));
  EXPECT_EQ(h.get_codes(dst), transposed(codes, 64, 32));
}

TEST(TransposePe, MatmulPathOnNcV2SpreadsNaNAndLosesNegativeZero) {
  Harness h(2);
  const auto src = sbuf(num::bf16(), 0, 4, 0, {3});
  const auto dst = psum(num::fp32(), 0, 3, 0, {4});
  // Partitions: (1, 2, 3), (4, -0, 6), (inf, 8, 9), (10, 11, 12).
  h.put(src, {1, 2, 3, 4, -0.0, 6, INFINITY, 8, 9, 10, 11, 12});
  ASSERT_TRUE(h.run(make(Opcode::kTransposePe, Engine::kTensor, {dst, src})))
      << h.faults().to_string();
  const auto out = h.get(dst);  // [3][4]
  // Row f = 0 holds the inf: inf x 0 = NaN reaches every other output of the row.
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]) && std::isnan(out[3]));
  EXPECT_EQ(out[2], INFINITY);
  EXPECT_EQ(out[4], 2.0);
  EXPECT_TRUE(same(out[5], 0.0));  // -0 came back as +0 (the sum starts at +0)
  EXPECT_EQ(out[11], 12.0);
  // Bit-exact mode does not exist on NC-v2.
  isa::Params p;
  p.transpose = true;
  EXPECT_FALSE(h.run(make(Opcode::kTransposePe, Engine::kTensor, {dst, src}, p)));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kUnsupported);
}

TEST(TransposeDve, SmallTileBitExactAndCasting) {
  Harness h;
  Rng rng(3);
  const auto src = sbuf(num::fp16(), 0, 32, 0, {20});
  const auto dst = sbuf(num::fp16(), 32, 20, 0, {32});
  const auto codes = random_codes(rng, 32 * 20, 2);
  h.put_codes(src, codes);
  ASSERT_TRUE(h.run(make(Opcode::kTransposeDve, Engine::kVector, {dst, src})))
      << h.faults().to_string();
  EXPECT_EQ(h.get_codes(dst), transposed(codes, 32, 20));
  const auto d32 = sbuf(num::fp32(), 64, 20, 0, {32});
  ASSERT_TRUE(h.run(make(Opcode::kTransposeDve, Engine::kVector, {d32, src})));
  const auto vals = h.get(src), out = h.get(d32);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 20; ++c)
      ASSERT_TRUE(
          same(out[static_cast<size_t>(c * 32 + r)], vals[static_cast<size_t>(r * 20 + c)]));
  const auto big = sbuf(num::fp16(), 0, 64, 0, {8});
  EXPECT_FALSE(h.run(make(Opcode::kTransposeDve, Engine::kVector, {dst, big})));
}

TEST(DmaTranspose, HbmToSbufTwoAndFourBytes) {
  for (num::Format f : {num::bf16(), num::fp32()}) {
    Harness h(3);
    Rng rng(4);
    const auto src = hbm(f, 4096, 48, 128);
    const auto dst = sbuf(f, 0, 128, 0, {48});
    const auto codes = random_codes(rng, 48 * 128, f.storage_bytes);
    h.put_codes(src, codes);
    ASSERT_TRUE(h.run(make(Opcode::kDmaTranspose, Engine::kSync, {dst, src})))
        << h.faults().to_string();
    EXPECT_EQ(h.get_codes(dst), transposed(codes, 48, 128));
  }
  Harness v2(2);
  EXPECT_FALSE(v2.run(make(Opcode::kDmaTranspose, Engine::kSync,
                           {sbuf(num::bf16(), 0, 128, 0, {4}), hbm(num::bf16(), 0, 4, 128)})));
}

}  // namespace
}  // namespace trnsim::core::testing
