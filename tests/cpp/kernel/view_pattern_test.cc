// Explicit access patterns (View::pattern, NKI's .ap()) and reinterpreting casts (View::bitcast)
// checked on the access patterns they produce and through a functional run.
#include <gtest/gtest.h>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::KernelBuilder;
using kernel::ViewDim;

TEST(ViewPattern, TilePatternStartsAtItsPartitionAndOffset) {
  KernelBuilder kb(chip("trn2"));
  auto t = kb.sbuf("t", num::fp32(), {16, 16});
  // t[2:6, 8:16] as NKI writes it: offset 2 * 16 + 8, partition step 16.
  auto v = t.pattern(2 * 16 + 8, {{4, 16}, {8, 1}});
  EXPECT_EQ(v.start_partition(), 2);
  EXPECT_EQ(v.offset(), 8);
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{4, 8}));
  EXPECT_THROW(t.pattern(0, {{8, 32}, {16, 1}}), InputError);   // every other partition
  EXPECT_THROW(t.pattern(8, {{2, 16}, {16, 1}}), InputError);   // crosses a partition end
  EXPECT_THROW(t.pattern(0, {{17, 16}, {16, 1}}), InputError);  // past the tile
}

TEST(ViewPattern, HbmPatternTransposesAndBitcastHalvesElements) {
  KernelBuilder kb(chip("trn1"));
  auto x = kb.input("x", num::fp32(), {8, 4});
  auto y = kb.output("y", num::fp32(), {4, 8});
  auto t = kb.sbuf("t", num::fp32(), {4, 8});
  kb.dma_copy(t, x.pattern(0, {{4, 1}, {8, 4}}));  // x.T, read column by column
  kb.dma_copy(y, t);
  auto b = t.bitcast(num::bf16());
  EXPECT_EQ(b.shape(), (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(b.dtype().name(), "bf16");
  EXPECT_THROW(t(kernel::all, {0, 8, 2}).bitcast(num::bf16()), InputError);
  const isa::Program p = kb.build();
  std::vector<float> xv(32);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
  auto out = run(chip("trn1"), p, {{"x", xv}});
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 8; ++c) ASSERT_EQ(out["y"][r * 8 + c], xv[c * 4 + r]);
}

TEST(ViewPattern, NegativeStepsWalkDownwards) {
  // Each row read right to left (offset at the last column, step -1), on chip and from HBM;
  // the bounds are those of the lowest and highest element reached.
  KernelBuilder kb(chip("trn2"));
  auto x = kb.input("x", num::fp32(), {4, 8});
  auto y = kb.output("y", num::fp32(), {4, 8});
  auto t = kb.sbuf("t", num::fp32(), {4, 8});
  auto u = kb.sbuf("u", num::fp32(), {4, 8});
  kb.dma_copy(t, x.pattern(7, {{4, 8}, {8, -1}}));     // x[:, ::-1]
  kb.tensor_copy(u, t.pattern(7, {{4, 8}, {8, -1}}));  // reversed again: x
  kb.dma_copy(y, u);
  EXPECT_THROW(t.pattern(6, {{4, 8}, {8, -1}}), InputError);  // reaches before the row
  EXPECT_THROW(x.pattern(3, {{4, 8}, {8, -1}}), InputError);  // element -4 of the tensor
  const isa::Program p = kb.build();
  std::vector<float> xv(32);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
  auto out = run(chip("trn2"), p, {{"x", xv}});
  EXPECT_EQ(out["y"], xv);
}

TEST(ViewPattern, AStridedWriteKeepsTheElementsBetween) {
  // t = 0, then t[:, 0:8:7] = x[:, 0:2]: the write spans the row but writes two elements, so
  // the tile's earlier value stays live for the six between (placement must not treat the
  // write as replacing the tile, which left those bytes unwritten in its new place).
  KernelBuilder kb(chip("trn2"));
  auto x = kb.input("x", num::fp32(), {4, 8});
  auto y = kb.output("y", num::fp32(), {4, 8});
  auto s = kb.sbuf("s", num::fp32(), {4, 8});
  auto t = kb.sbuf("t", num::fp32(), {4, 8});
  kb.dma_copy(s, x);
  kb.memset(t, 0.0);
  kb.tensor_copy(t.pattern(0, {{4, 8}, {2, 7}}), s.pattern(0, {{4, 8}, {2, 1}}));
  kb.dma_copy(y, t);
  const isa::Program p = kb.build();
  std::vector<float> xv(32);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i + 1);
  auto out = run(chip("trn2"), p, {{"x", xv}});
  for (size_t r = 0; r < 4; ++r)
    for (size_t c = 0; c < 8; ++c)
      ASSERT_EQ(out["y"][r * 8 + c], c == 0   ? xv[r * 8]
                                     : c == 7 ? xv[r * 8 + 1]
                                              : 0.0f)
          << r << ", " << c;
}

}  // namespace
}  // namespace trnsim::kernel_test
