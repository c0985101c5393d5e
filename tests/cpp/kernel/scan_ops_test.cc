// tensor_tensor_scan and tensor_scalar_reduce through the kernel API, against references
// computed here (small integers: every step exact in fp32).
#include <gtest/gtest.h>

#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using isa::AluOp;
using kernel::KernelBuilder;

TEST(ScanOps, ScanAndScalarReduce) {
  const arch::ChipSpec& spec = chip("trn2");
  constexpr int64_t P = 4, F = 16;
  KernelBuilder kb(spec);
  auto x = kb.input("x", num::fp32(), {P, F});
  auto scan_out = kb.output("scan", num::fp32(), {P, F});
  auto scaled_out = kb.output("scaled", num::fp32(), {P, F});
  auto sum_out = kb.output("sum", num::fp32(), {P, 1});
  auto xt = kb.sbuf("x", num::fp32(), {P, F});
  kb.dma_copy(xt, x);
  auto scan = kb.sbuf("scan", num::fp32(), {P, F});
  // r[i] = (x[i] * r[i-1]) + x[i], r[-1] = 1.
  kb.tensor_tensor_scan(scan, xt, xt, 1.0f, AluOp::kMult, AluOp::kAdd);
  kb.dma_copy(scan_out, scan);
  auto scaled = kb.sbuf("scaled", num::fp32(), {P, F});
  auto sum = kb.sbuf("sum", num::fp32(), {P, 1});
  kb.tensor_scalar_reduce(scaled, sum, xt, {AluOp::kMult, 3.0f}, AluOp::kAdd);
  kb.dma_copy(scaled_out, scaled);
  kb.dma_copy(sum_out, sum);
  const std::vector<float> xv = small_ints(P * F, -1, 1, 5);
  auto out = run(spec, kb.build(), {{"x", xv}});
  for (int64_t r = 0; r < P; ++r) {
    float prev = 1.0f, s = 0.0f;
    for (int64_t i = 0; i < F; ++i) {
      const size_t k = static_cast<size_t>(r * F + i);
      prev = xv[k] * prev + xv[k];
      s += 3.0f * xv[k];
      ASSERT_EQ(out["scan"][k], prev);
      ASSERT_EQ(out["scaled"][k], 3.0f * xv[k]);
    }
    ASSERT_EQ(out["sum"][static_cast<size_t>(r)], s);
  }
}

}  // namespace
}  // namespace trnsim::kernel_test
