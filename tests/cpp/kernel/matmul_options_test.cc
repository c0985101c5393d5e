// TensorE options of the API: PE tiling (a matmul on a quarter or half of the array) and NC-v3
// double-row FP8 (K = 256 as [128, 2, F]), run and compared with an integer reference.
#include <gtest/gtest.h>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::all;
using kernel::KernelBuilder;

// c[M, N] = a[K, M].T @ b[K, N] for integer-valued inputs.
std::vector<float> reference(const std::vector<float>& a, const std::vector<float>& b, int64_t k,
                             int64_t m, int64_t n) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t s = 0;
      for (int64_t x = 0; x < k; ++x)
        s += static_cast<int64_t>(a[static_cast<size_t>(x * m + i)]) *
             static_cast<int64_t>(b[static_cast<size_t>(x * n + j)]);
      c[static_cast<size_t>(i * n + j)] = static_cast<float>(s);
    }
  return c;
}

TEST(MatmulOptions, PeTiles) {
  for (const std::string g : {"trn1", "trn2"}) {
    SCOPED_TRACE(g);
    const int64_t k = 64, m = 64, n = 256;
    KernelBuilder kb(chip(g));
    auto a = kb.input("a", num::bf16(), {k, m});
    auto b = kb.input("b", num::bf16(), {k, n});
    auto c = kb.output("c", num::fp32(), {2, m, n});
    auto at = kb.sbuf("at", num::bf16(), {k, m});
    auto bt = kb.sbuf("bt", num::bf16(), {k, n});
    auto ps = kb.psum("ps", num::fp32(), {m, 2, n});
    auto out = kb.sbuf("out", num::fp32(), {m, 2, n});
    kb.dma_copy(at, a);
    kb.dma_copy(bt, b);
    // The same product on the lower-right and the upper-left 64 x 64 tiles of the PE array.
    kb.matmul(ps(all, 0), at, bt,
              {.tile_row = 64, .tile_col = 64, .tile_rows = 64, .tile_cols = 64});
    kb.matmul(ps(all, 1), at, bt, {.tile_rows = 64, .tile_cols = 64});
    kb.tensor_copy(out, ps);
    for (int64_t i = 0; i < 2; ++i) kb.dma_copy(c(i), out(all, i));
    const isa::Program p = kb.build();
    const auto av = small_ints(static_cast<size_t>(k * m), -5, 5, 61);
    const auto bv = small_ints(static_cast<size_t>(k * n), -5, 5, 62);
    auto res = run(chip(g), p, {{"a", av}, {"b", bv}});
    const std::vector<float> want = reference(av, bv, k, m, n);
    const std::vector<float>& got = res["c"];
    ASSERT_EQ(got.size(), 2 * want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << i;
      ASSERT_EQ(got[want.size() + i], want[i]) << i;
    }
  }
  // A tile size the generation does not have.
  KernelBuilder kb(chip("trn1"));
  auto st = kb.sbuf("st", num::bf16(), {32, 32});
  auto mv = kb.sbuf("mv", num::bf16(), {32, 64});
  auto ps = kb.psum("ps", num::fp32(), {32, 64});
  EXPECT_THROW(kb.matmul(ps, st, mv, {.tile_rows = 32, .tile_cols = 32}), InputError);
}

TEST(MatmulOptions, DoubleRowFp8OnTrn2) {
  const int64_t k = 256, m = 128, n = 512;
  KernelBuilder kb(chip("trn2"));
  auto a = kb.input("a", num::fp8_e4m3(), {k, m});
  auto b = kb.input("b", num::fp8_e4m3(), {k, n});
  auto c = kb.output("c", num::fp32(), {m, n});
  // K row h * 128 + p lives in partition p, half h (the most-major free dim).
  auto at = kb.sbuf("at", num::fp8_e4m3(), {128, 2, m});
  auto bt = kb.sbuf("bt", num::fp8_e4m3(), {128, 2, n});
  for (int64_t h = 0; h < 2; ++h) {
    kb.dma_copy(at(all, h), a({h * 128, (h + 1) * 128}));
    kb.dma_copy(bt(all, h), b({h * 128, (h + 1) * 128}));
  }
  auto ps = kb.psum("ps", num::fp32(), {m, n});
  auto out = kb.sbuf("out", num::fp32(), {m, n});
  kb.matmul(ps, at, bt, {.double_row = true});
  kb.tensor_copy(out, ps);
  kb.dma_copy(c, out);
  const isa::Program p = kb.build();
  EXPECT_EQ(p.stream(isa::Engine::kTensor)[0].p.perf_mode, isa::MatmulPerfMode::kDoubleRowFp8);
  const auto av = small_ints(static_cast<size_t>(k * m), -4, 4, 71);
  const auto bv = small_ints(static_cast<size_t>(k * n), -4, 4, 72);
  auto res = run(chip("trn2"), p, {{"a", av}, {"b", bv}});
  EXPECT_EQ(res["c"], reference(av, bv, k, m, n));

  // Not on NC-v2: the call names the feature.
  KernelBuilder v2(chip("trn1"));
  auto s1 = v2.sbuf("s", num::fp8_e4m3(), {128, 2, 64});
  auto m1 = v2.sbuf("m", num::fp8_e4m3(), {128, 2, 64});
  auto p1 = v2.psum("p", num::fp32(), {64, 64});
  try {
    v2.matmul(p1, s1, m1, {.double_row = true});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("double_row"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trnsim::kernel_test
