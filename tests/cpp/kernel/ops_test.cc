// The API's VectorE and GpSimd calls that the example kernels do not use, run through the
// functional runner against references computed here: iota, affine_select, select, max8,
// partition_reduce, VectorE transpose, GpSimd tensor_tensor, memset on GpSimd. The values
// cross engines (GpSimd -> VectorE -> DMA), so the semaphores are exercised too.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/race/race_check.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using isa::AluOp;
using isa::Engine;
using kernel::all;
using kernel::KernelBuilder;

class Ops : public ::testing::TestWithParam<std::string> {};

TEST_P(Ops, VectorAndGpSimdCalls) {
  const arch::ChipSpec& spec = chip(GetParam());
  constexpr int64_t P = 128, F = 64;
  KernelBuilder kb(spec);
  auto x = kb.input("x", num::fp32(), {P, F});
  auto iota_out = kb.output("iota", num::fp32(), {P, F});
  auto masked_out = kb.output("masked", num::fp32(), {P, F});
  auto select_out = kb.output("select", num::fp32(), {P, F});
  auto max8_out = kb.output("max8", num::fp32(), {P, 8});
  auto colsum_out = kb.output("colsum", num::fp32(), {1, F});
  auto tr_out = kb.output("transposed", num::fp32(), {32, 32});
  auto xt = kb.sbuf("x", num::fp32(), {P, F});
  kb.dma_copy(xt, x);

  auto io = kb.sbuf("iota", num::fp32(), {P, F});
  kb.iota(io, 5, 2);  // 5 + 2p + i
  kb.dma_copy(iota_out, io);

  // Keep x where i - p <= 0 (a lower triangle), else -1.
  auto masked = kb.sbuf("masked", num::fp32(), {P, F});
  kb.affine_select(masked, xt, AluOp::kIsLe, 0, -1, -1.0);
  kb.dma_copy(masked_out, masked);

  // select(x > 0, x, 2x): the predicate from VectorE, 2x from GpSimd.
  auto pred = kb.sbuf("pred", num::fp32(), {P, F});
  auto twice = kb.sbuf("twice", num::fp32(), {P, F});
  auto sel = kb.sbuf("sel", num::fp32(), {P, F});
  kb.tensor_scalar(pred, xt, {AluOp::kIsGt, 0.0f});
  kb.tensor_tensor(twice, xt, xt, AluOp::kAdd, Engine::kGpSimd);
  kb.select(sel, pred, xt, twice);
  kb.dma_copy(select_out, sel);

  auto m8 = kb.sbuf("m8", num::fp32(), {P, 8});
  kb.max8(m8, xt);
  kb.dma_copy(max8_out, m8);

  auto colsum = kb.sbuf("colsum", num::fp32(), {1, F});
  kb.partition_reduce(colsum, xt, AluOp::kAdd);
  kb.dma_copy(colsum_out, colsum);

  auto tr = kb.sbuf("tr", num::fp32(), {32, 32});
  kb.memset(tr, 0.0, Engine::kGpSimd);
  kb.transpose(tr, xt({0, 32}, {0, 32}), Engine::kVector);
  kb.dma_copy(tr_out, tr);
  const isa::Program p = kb.build();
  EXPECT_TRUE(core::check_races(p, spec).clean());

  const std::vector<float> xv = sixty_fourths(P * F, 81);
  auto out = run(spec, p, {{"x", xv}});
  for (int64_t r = 0; r < P; ++r) {
    std::vector<float> row(xv.begin() + r * F, xv.begin() + (r + 1) * F);
    for (int64_t i = 0; i < F; ++i) {
      const float v = row[static_cast<size_t>(i)];
      const size_t k = static_cast<size_t>(r * F + i);
      ASSERT_EQ(out["iota"][k], static_cast<float>(5 + 2 * r + i));
      ASSERT_EQ(out["masked"][k], i - r <= 0 ? v : -1.0f);
      ASSERT_EQ(out["select"][k], v > 0 ? v : v + v);
    }
    std::sort(row.begin(), row.end(), std::greater<float>());
    for (int64_t j = 0; j < 8; ++j)
      ASSERT_EQ(out["max8"][static_cast<size_t>(r * 8 + j)], row[static_cast<size_t>(j)]);
  }
  for (int64_t i = 0; i < F; ++i) {
    float s = xv[static_cast<size_t>(i)];  // partition order, fp32 (sums of 1/64ths: exact)
    for (int64_t r = 1; r < P; ++r) s += xv[static_cast<size_t>(r * F + i)];
    ASSERT_EQ(out["colsum"][static_cast<size_t>(i)], s);
  }
  for (int64_t a = 0; a < 32; ++a)
    for (int64_t b = 0; b < 32; ++b)
      ASSERT_EQ(out["transposed"][static_cast<size_t>(a * 32 + b)],
                xv[static_cast<size_t>(b * F + a)]);
}

TEST_P(Ops, TensorETransposeKeepsFp32BitExactFromNcV3) {
  // An fp32 transpose into fp32 PSUM takes the bit-exact mode where the PE array has it (2x
  // the identity-matmul rate for FP32, AG3); a bf16 source into fp32 PSUM cannot.
  const arch::ChipSpec& spec = chip(GetParam());
  constexpr int64_t P = 128, F = 96;
  KernelBuilder kb(spec);
  auto x = kb.input("x", num::fp32(), {P, F});
  auto y = kb.output("y", num::fp32(), {F, P});
  auto xt = kb.sbuf("xt", num::fp32(), {P, F});
  auto xb = kb.sbuf("xb", num::bf16(), {P, F});
  auto ps = kb.psum("ps", num::fp32(), {F, P});
  auto ps2 = kb.psum("ps2", num::fp32(), {F, P});
  auto out = kb.sbuf("out", num::fp32(), {F, P});
  kb.dma_copy(xt, x);
  kb.tensor_copy(xb, xt);
  kb.transpose(ps, xt);
  kb.transpose(ps2, xb);
  kb.tensor_copy(out, ps);
  kb.dma_copy(y, out);
  const isa::Program p = kb.build();
  std::vector<bool> exact;
  for (const isa::Instruction& in : p.stream(Engine::kTensor))
    if (in.op == isa::Opcode::kTransposePe) exact.push_back(in.p.transpose);
  ASSERT_EQ(exact.size(), 2u);
  EXPECT_EQ(exact[0], spec.core.features.bit_exact_transpose);
  EXPECT_FALSE(exact[1]);
  const std::vector<float> xv = sixty_fourths(P * F, 7);
  auto got = run(spec, p, {{"x", xv}});
  for (int64_t r = 0; r < P; ++r)
    for (int64_t c = 0; c < F; ++c)
      ASSERT_EQ(got["y"][static_cast<size_t>(c * P + r)], xv[static_cast<size_t>(r * F + c)]);
}

INSTANTIATE_TEST_SUITE_P(Generations, Ops, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
