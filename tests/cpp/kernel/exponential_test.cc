// exponential (NC-v4 VectorE exp with a max subtracted) through the kernel API: values against
// std::exp in double rounded once, and an InputError naming the call on generations without it.
#include <gtest/gtest.h>

#include <cmath>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::KernelBuilder;

isa::Program exp_program(const arch::ChipSpec& spec) {
  KernelBuilder kb(spec);
  auto x = kb.input("x", num::fp32(), {128, 32});
  auto m = kb.input("m", num::fp32(), {128, 1});
  auto y = kb.output("y", num::fp32(), {128, 32});
  auto xt = kb.sbuf("x", num::fp32(), {128, 32});
  auto mt = kb.sbuf("m", num::fp32(), {128, 1});
  kb.dma_copy(xt, x);
  kb.dma_copy(mt, m);
  kb.exponential(xt, xt, mt);
  kb.dma_copy(y, xt);
  return kb.build();
}

TEST(Exponential, SubtractsTheRowMaxOnTrn3) {
  const std::vector<float> xv = sixty_fourths(128 * 32, 3), mv = sixty_fourths(128, 4);
  auto out = run(chip("trn3"), exp_program(chip("trn3")), {{"x", xv}, {"m", mv}});
  for (size_t r = 0; r < 128; ++r)
    for (size_t i = 0; i < 32; ++i) {
      const float d = xv[r * 32 + i] - mv[r];
      ASSERT_EQ(out["y"][r * 32 + i], static_cast<float>(std::exp(static_cast<double>(d))));
    }
}

TEST(Exponential, IsAnErrorBeforeNcV4) { EXPECT_THROW(exp_program(chip("trn2")), InputError); }

}  // namespace
}  // namespace trnsim::kernel_test
