// Working tiles to and from memory: decode exactness, element order of strided / negative /
// HBM patterns, the output cast's rounding key, raw codes, and uninitialised reads as NaN.
#include "mem/tile_io.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "numerics/convert.h"

namespace trnsim::mem {
namespace {

arch::CoreSpec core() {
  arch::CoreSpec c;
  c.sbuf.partitions = 128;
  c.sbuf.bytes_per_partition = 4096;
  c.psum.partitions = 128;
  c.psum.banks = 8;
  c.psum.bank_bytes = 2048;
  return c;
}

struct Fixture : ::testing::Test {
  Hbm hbm{1 << 20};
  CoreMemory m{core(), hbm};
  IoScratch s;
};

TEST_F(Fixture, UninitialisedMemoryReadsNaNInEveryFloatFormat) {
  for (num::Format f : {num::fp32(), num::bf16(), num::fp16(), num::fp8_e4m3(), num::fp8_e4m3fn(),
                        num::fp8_e5m2(), num::tf32()}) {
    for (isa::Space sp : {isa::Space::kSbuf, isa::Space::kPsum, isa::Space::kHbm}) {
      isa::AccessPattern a;
      a.space = sp;
      a.dtype = f;
      a.num_partitions = 4;
      a.partition_stride = 8;
      a.ndim = 1;
      a.dims[0] = {1, 8};
      Tile t;
      read_tile(m, a, t, s);
      for (int64_t i = 0; i < t.size(); ++i)
        ASSERT_TRUE(std::isnan(t.data[static_cast<size_t>(i)])) << f.name();
    }
  }
}

TEST_F(Fixture, StridedAndNegativePatternsKeepPatternOrder) {
  // Partition 3: bf16 values 0..15 at bytes 0..31.
  for (int i = 0; i < 16; ++i) {
    const auto c =
        static_cast<uint16_t>(num::encode(num::bf16(), i, num::Rounding::kNearestEven, 0, {}));
    std::memcpy(m.sbuf().row(3) + 2 * i, &c, 2);
  }
  isa::AccessPattern a;
  a.dtype = num::bf16();
  a.start_partition = 3;
  a.offset = 30;  // element 15; two groups (15, 14) of three steps back by 5
  a.ndim = 2;
  a.dims[0] = {-1, 2};
  a.dims[1] = {-5, 3};
  Tile t;
  ASSERT_FALSE(m.check(a));
  read_tile(m, a, t, s);
  ASSERT_EQ(t.cols, 6);
  const float want[] = {15, 10, 5, 14, 9, 4};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.at(0, i), want[i]);
  // Writing it back as fp32 into HBM rows with a gap between rows.
  isa::AccessPattern h;
  h.space = isa::Space::kHbm;
  h.dtype = num::fp32();
  h.num_partitions = 2;
  h.partition_stride = 5;
  h.offset = 1000;
  h.ndim = 1;
  h.dims[0] = {1, 3};
  Tile t2 = t;
  t2.rows = 2;
  t2.cols = 3;
  write_tile(m, h, t2, s, {});
  float got[8];
  hbm.read(1000, got, sizeof got);
  EXPECT_EQ(got[0], 15);
  EXPECT_EQ(got[2], 5);
  EXPECT_TRUE(std::isnan(got[3]));  // the gap was never written
  EXPECT_EQ(got[5], 14);
  EXPECT_EQ(got[7], 4);
}

TEST_F(Fixture, CastRoundingKeyAndRawCodes) {
  isa::AccessPattern a;
  a.dtype = num::bf16();
  a.num_partitions = 16;
  a.ndim = 1;
  a.dims[0] = {1, 64};
  Tile t;
  t.resize(16, 64);
  for (int64_t i = 0; i < t.size(); ++i)
    t.data[static_cast<size_t>(i)] = 1.0f + static_cast<float>(i) * 0x1p-12f;
  num::RoundOptions sr;
  sr.rounding = num::Rounding::kStochastic;
  sr.seed = 42;
  sr.stream = 7;
  std::vector<uint8_t> first, again, other;
  write_tile(m, a, t, s, sr);
  read_codes(m, a, first);
  write_tile(m, a, t, s, sr);
  read_codes(m, a, again);
  sr.seed = 43;
  write_tile(m, a, t, s, sr);
  read_codes(m, a, other);
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  // Element (r, c) draws random_u32(seed, stream, r * cols + c): the same as one bulk convert.
  std::vector<uint8_t> bulk(first.size());
  sr.seed = 42;
  num::convert(num::fp32(), t.data.data(), num::bf16(), bulk.data(), 16 * 64, sr);
  EXPECT_EQ(first, bulk);
  // Raw codes go back bit for bit.
  write_codes(m, a, other.data());
  read_codes(m, a, again);
  EXPECT_EQ(again, other);
}

}  // namespace
}  // namespace trnsim::mem
