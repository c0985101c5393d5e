// Views: indexing, reshape, broadcast, their access patterns and footprints.
#include <gtest/gtest.h>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel/footprint.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::all;
using kernel::KernelBuilder;

TEST(View, TileSlicesBecomeAccessPatterns) {
  KernelBuilder kb(chip("trn1"));
  const kernel::Tile t = kb.sbuf("t", num::bf16(), {128, 8, 1024});
  const isa::AccessPattern whole = t.access();
  EXPECT_EQ(whole.num_partitions, 128);
  EXPECT_EQ(whole.ndim, 1);  // the free dims are contiguous: merged into one
  EXPECT_EQ(whole.dims[0].size, 8 * 1024);

  const kernel::View v = t({32, 64}, 3, {256, 512});
  const isa::AccessPattern ap = v.access();
  EXPECT_EQ(ap.start_partition, 32);
  EXPECT_EQ(ap.num_partitions, 32);
  EXPECT_EQ(ap.offset, t.access().offset + (3 * 1024 + 256) * 2);
  ASSERT_EQ(ap.ndim, 1);
  EXPECT_EQ(ap.dims[0].size, 256);
  EXPECT_EQ(v.shape(), (std::vector<int64_t>{32, 256}));

  // A column block of every tile: two dims that cannot merge.
  const isa::AccessPattern cols = t(all, all, {0, 512}).access();
  ASSERT_EQ(cols.ndim, 2);
  EXPECT_EQ(cols.dims[0].stride, 1024);
  EXPECT_EQ(cols.dims[0].size, 8);
  EXPECT_EQ(cols.dims[1].size, 512);
  // A step on a free dim.
  const isa::AccessPattern odd = t(all, 0, {1, 1024, 2}).access();
  EXPECT_EQ(odd.dims[0].stride, 2);
  EXPECT_EQ(odd.dims[0].size, 512);
}

TEST(View, HbmRowsAndColumns) {
  KernelBuilder kb(chip("trn1"));
  const kernel::Tensor x = kb.input("x", num::bf16(), {1024, 2048});
  const isa::AccessPattern ap = x({128, 256}, {512, 1024}).access();
  EXPECT_EQ(ap.space, isa::Space::kHbm);
  EXPECT_EQ(ap.num_partitions, 128);
  EXPECT_EQ(ap.partition_stride, 2048);
  EXPECT_EQ(ap.offset, x.region().base + (128 * 2048 + 512) * 2);
  EXPECT_EQ(ap.dims[0].size, 512);
  // The footprint is the block itself, so neighbouring column blocks do not collide.
  const kernel::Footprint f = kernel::footprint(x({128, 256}, {512, 1024}));
  EXPECT_EQ(f.rect, (kernel::Rect{128, 256, 1024, 2048}));
  EXPECT_FALSE(f.rect.overlaps(kernel::footprint(x({128, 256}, {1024, 1536})).rect));
  // A broadcast row vector: 128 rows of stride 0.
  const kernel::Tensor g = kb.input("g", num::fp32(), {2048});
  const isa::AccessPattern b = g.broadcast(0, 128).access();
  EXPECT_EQ(b.num_partitions, 128);
  EXPECT_EQ(b.partition_stride, 0);
}

TEST(View, Reshape) {
  KernelBuilder kb(chip("trn1"));
  const kernel::Tile t = kb.sbuf("t", num::bf16(), {128, 2, 512});
  const kernel::View r = t.reshape({128, 1024});
  EXPECT_EQ(r.shape(), (std::vector<int64_t>{128, 1024}));
  EXPECT_EQ(r.access(), t.access());
  EXPECT_THROW(t.reshape({64, 2048}), InputError);                      // partition dim changes
  EXPECT_THROW(t(all, all, {0, 256}).reshape({128, 512}), InputError);  // not contiguous
}

// numpy's rule: a strided view reshapes without a copy when each group of dims that merge is
// one run; unit dims come and go, and a dim splits, whatever the strides around them.
TEST(View, ReshapeOfAStridedSlice) {
  KernelBuilder kb(chip("trn2"));
  const kernel::Tensor a = kb.input("a", num::fp32(), {128, 256});
  const kernel::View s = a({0, 128}, {128, 256});  // rows of 128 at a stride of 256
  const kernel::View u = s.reshape({1, 128, 128});
  EXPECT_EQ(u.shape(), (std::vector<int64_t>{1, 128, 128}));
  EXPECT_EQ(kernel::footprint(u).rect, kernel::footprint(s).rect);
  EXPECT_EQ(u.reshape({128, 128}).access(), s.access());
  const kernel::View split = s.reshape({128, 2, 64});  // the column run split in two
  EXPECT_EQ(kernel::footprint(split).rect, kernel::footprint(s).rect);
  EXPECT_EQ(split.reshape({128, 128}).access(), s.access());
  EXPECT_THROW(s.reshape({16384}), InputError);    // rows and columns are not one run
  EXPECT_THROW(s.reshape({64, 256}), InputError);  // two rows merged: not one run
  const kernel::Tile t = kb.sbuf("t", num::bf16(), {128, 4, 512});
  const kernel::View c = t(all, all, {0, 256}).reshape({128, 4, 2, 128});
  EXPECT_EQ(c.reshape({128, 4, 256}).access(), t(all, all, {0, 256}).access());
}

TEST(View, IndexErrorsNameTheView) {
  KernelBuilder kb(chip("trn1"));
  const kernel::Tile t = kb.sbuf("lhs", num::bf16(), {128, 512});
  try {
    (void)t({0, 129});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'lhs'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)t({0, 128, 2}), InputError);  // partition striding
  EXPECT_THROW((void)t(0, 0, 0), InputError);      // too many indices
}

TEST(View, TilesHaveVirtualBasesUntilBuild) {
  KernelBuilder kb(chip("trn1"));
  const int64_t usable = chip("trn1").core.sbuf.usable_bytes_per_partition;
  const auto u8 = num::int_format(num::Dtype::kUint8);
  const kernel::Tile big = kb.sbuf("big", u8, {128, usable});
  const kernel::Tile again = kb.sbuf("again", u8, {128, usable});  // no place yet: no error
  EXPECT_GE(big.region().base, kernel::kVirtualBase);
  EXPECT_GE(again.region().base, big.region().base + usable);
  EXPECT_EQ(again.region().tile, big.region().tile + 1);
}

}  // namespace
}  // namespace trnsim::kernel_test
