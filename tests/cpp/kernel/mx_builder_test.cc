// The kernel API's NC-v4 MX calls: quantize_mx then matmul_mx, the product checked against a
// reference computed here from the quantised values and scales the kernel writes out (block
// layout: 8 partitions x 4 elements, the scale of partition p in row 32 (p / 32) + (p % 32) / 8),
// and a dequantised value within FP8's precision of its input; accumulation groups as for
// matmul; an InputError naming the call before NC-v4.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::KernelBuilder;

constexpr int64_t kP = 32;  // partitions of the operands: K = 4 x 32 = 128
constexpr int64_t kM = 16, kN = 8;

int64_t scale_row(int64_t p) { return 32 * (p / 32) + (p % 32) / 8; }

// Quantises a [32, 4M] and a [32, 4N] bf16 input and multiplies them `passes` times into one
// PSUM accumulation group; writes out the product and the quantised operands and scales.
isa::Program mx_program(const arch::ChipSpec& spec, int passes = 1) {
  KernelBuilder kb(spec);
  auto a = kb.input("a", num::bf16(), {kP, 4 * kM});
  auto b = kb.input("b", num::bf16(), {kP, 4 * kN});
  auto c = kb.output("c", num::fp32(), {kM, kN});
  auto qa_out = kb.output("qa", num::fp8_e4m3fn(), {kP, 4 * kM});
  auto qb_out = kb.output("qb", num::fp8_e4m3fn(), {kP, 4 * kN});
  auto sa_out = kb.output("sa", num::e8m0(), {kP, kM});
  auto sb_out = kb.output("sb", num::e8m0(), {kP, kN});
  auto at = kb.sbuf("a", num::bf16(), {kP, 4 * kM});
  auto bt = kb.sbuf("b", num::bf16(), {kP, 4 * kN});
  auto qa = kb.sbuf("qa", num::fp8_e4m3fn(), {kP, 4 * kM});
  auto qb = kb.sbuf("qb", num::fp8_e4m3fn(), {kP, 4 * kN});
  auto sa = kb.sbuf("sa", num::e8m0(), {kP, kM});
  auto sb = kb.sbuf("sb", num::e8m0(), {kP, kN});
  auto acc = kb.psum("acc", num::fp32(), {kM, kN});
  auto ct = kb.sbuf("c", num::fp32(), {kM, kN});
  kb.dma_copy(at, a);
  kb.dma_copy(bt, b);
  kb.quantize_mx(qa, sa, at);
  kb.quantize_mx(qb, sb, bt);
  for (int i = 0; i < passes; ++i) kb.matmul_mx(acc, qa, qb, sa, sb);
  kb.tensor_copy(ct, acc);
  kb.dma_copy(c, ct);
  kb.dma_copy(qa_out, qa);
  kb.dma_copy(qb_out, qb);
  kb.dma_copy(sa_out, sa);
  kb.dma_copy(sb_out, sb);
  return kb.build();
}

// The dequantised [32, 4F] operand: value x its block's scale (an E8M0 output reads as 2^e).
std::vector<double> dequantised(const std::vector<float>& q, const std::vector<float>& s,
                                int64_t f) {
  std::vector<double> v(q.size());
  for (int64_t p = 0; p < kP; ++p)
    for (int64_t j = 0; j < 4 * f; ++j)
      v[static_cast<size_t>(p * 4 * f + j)] =
          static_cast<double>(q[static_cast<size_t>(p * 4 * f + j)]) *
          static_cast<double>(s[static_cast<size_t>(scale_row(p) * f + j / 4)]);
  return v;
}

TEST(MxBuilder, QuantizeThenMatmulMxOnTrn3) {
  for (int passes : {1, 3}) {
    const std::vector<float> av = sixty_fourths(kP * 4 * kM, 11);
    const std::vector<float> bv = sixty_fourths(kP * 4 * kN, 12);
    auto out = run(chip("trn3"), mx_program(chip("trn3"), passes), {{"a", av}, {"b", bv}});
    const auto da = dequantised(out["qa"], out["sa"], kM);
    const auto db = dequantised(out["qb"], out["sb"], kN);
    // Each dequantised value is its input to FP8 E4M3's precision (3 mantissa bits).
    for (size_t i = 0; i < av.size(); ++i)
      ASSERT_NEAR(da[i], av[i], std::abs(av[i]) / 8 + 1e-30) << i;
    // c[m, n] = passes x sum over K (partition p, element j of the 4) of a[k, m] b[k, n].
    std::vector<double> want(static_cast<size_t>(kM * kN), 0.0);
    for (int64_t m = 0; m < kM; ++m)
      for (int64_t n = 0; n < kN; ++n) {
        double sum = 0;
        for (int64_t p = 0; p < kP; ++p)
          for (int64_t j = 0; j < 4; ++j)
            sum += da[static_cast<size_t>(p * 4 * kM + 4 * m + j)] *
                   db[static_cast<size_t>(p * 4 * kN + 4 * n + j)];
        want[static_cast<size_t>(m * kN + n)] = passes * sum;
      }
    const ErrorStats e = compare(out["c"], want, 1e-2);
    EXPECT_LT(e.max_rel, 1e-5) << "passes " << passes << ", max abs " << e.max_abs;
  }
}

TEST(MxBuilder, IsAnErrorBeforeNcV4) { EXPECT_THROW(mx_program(chip("trn2")), InputError); }

TEST(MxBuilder, OperandsOutsideSbufNameTheCall) {
  KernelBuilder kb(chip("trn3"));
  auto q = kb.sbuf("q", num::fp8_e4m3fn(), {kP, 4 * kM});
  auto s = kb.sbuf("s", num::e8m0(), {kP, kM});
  auto acc = kb.psum("acc", num::fp32(), {kM, kM});
  auto bad = kb.psum("bad", num::fp32(), {kP, 4 * kM});
  try {
    kb.matmul_mx(acc, bad, q, s, s);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul_mx"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trnsim::kernel_test
