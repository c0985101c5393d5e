// SBUF/PSUM geometry from the core spec, 0xFF initial contents, and the bounds rules of
// access patterns (CoreMemory::check) with their typed faults.
#include "mem/core_memory.h"

#include <gtest/gtest.h>

#include "mem/access_rules.h"

namespace trnsim::mem {
namespace {

arch::CoreSpec core() {
  arch::CoreSpec c;
  c.sbuf.partitions = 128;
  c.sbuf.bytes_per_partition = 192 * 1024;
  c.psum.partitions = 128;
  c.psum.banks = 8;
  c.psum.bank_bytes = 2048;
  return c;
}

isa::AccessPattern ap(isa::Space s, int p0, int parts, int64_t offset, int64_t stride, int64_t size,
                      num::Format f = num::fp32()) {
  isa::AccessPattern a;
  a.space = s;
  a.dtype = f;
  a.start_partition = p0;
  a.num_partitions = parts;
  a.offset = offset;
  a.ndim = 1;
  a.dims[0] = {stride, size};
  return a;
}

TEST(CoreMemory, GeometryAndUninitialisedBytes) {
  Hbm h(1 << 20);
  CoreMemory m(core(), h);
  EXPECT_EQ(m.sbuf().partitions(), 128);
  EXPECT_EQ(m.sbuf().bytes_per_partition(), 192 * 1024);
  EXPECT_EQ(m.psum().bytes_per_partition(), 16 * 1024);
  EXPECT_EQ(m.psum().banks(), 8);
  EXPECT_EQ(m.sbuf().row(127)[192 * 1024 - 1], 0xFF);
  EXPECT_EQ(m.psum().row(3)[100], 0xFF);
  m.sbuf().row(0)[0] = 1;
  m.sbuf().clear();
  EXPECT_EQ(m.sbuf().row(0)[0], 0xFF);
}

TEST(CoreMemory, AcceptsPatternsInside) {
  Hbm h(1 << 20);
  CoreMemory m(core(), h);
  EXPECT_FALSE(m.check(ap(isa::Space::kSbuf, 0, 128, 0, 1, 192 * 256)));
  EXPECT_FALSE(m.check(ap(isa::Space::kPsum, 64, 64, 16 * 1024 - 4, 1, 1)));
  // Negative strides walk backwards from the offset.
  EXPECT_FALSE(m.check(ap(isa::Space::kSbuf, 0, 1, 396, -1, 100)));  // bytes 0..399
  EXPECT_FALSE(m.check(ap(isa::Space::kHbm, 0, 4, 0, 1, 1000)));
}

TEST(CoreMemory, FaultsOutsideWithRanges) {
  Hbm h(1 << 20);
  CoreMemory m(core(), h);
  auto f = m.check(ap(isa::Space::kSbuf, 0, 128, 192 * 1024 - 8, 1, 4));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, FaultKind::kOutOfBounds);
  EXPECT_EQ(f->begin, 192 * 1024 - 8);
  EXPECT_EQ(f->end, 192 * 1024 + 8);
  EXPECT_NE(f->to_string().find("sbuf partitions [0,128) bytes [196600,196616)"), std::string::npos)
      << f->to_string();
  f = m.check(ap(isa::Space::kPsum, 100, 29, 0, 1, 4));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, FaultKind::kPartitionRange);
  f = m.check(ap(isa::Space::kSbuf, 0, 1, 0, -1, 2));  // reaches byte -4
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, FaultKind::kOutOfBounds);
  EXPECT_EQ(f->begin, -4);
  auto hb = ap(isa::Space::kHbm, 0, 2, (1 << 20) - 16, 1, 4);
  hb.partition_stride = 4;
  ASSERT_TRUE(m.check(hb));  // second row passes the end of the device
  EXPECT_EQ(m.check(hb)->kind, FaultKind::kOutOfBounds);
  auto bad = ap(isa::Space::kSbuf, 0, 1, 0, 1, 0);
  EXPECT_EQ(m.check(bad)->kind, FaultKind::kBadAccessPattern);
  // Absurd sizes and strides do not overflow the arithmetic.
  auto huge = ap(isa::Space::kSbuf, 0, 1, 0, INT64_MAX / 2, 3);
  EXPECT_EQ(m.check(huge)->kind, FaultKind::kOutOfBounds);
}

TEST(AccessRules, EngineSpaces) {
  const auto sb = ap(isa::Space::kSbuf, 0, 1, 0, 1, 1);
  const auto ps = ap(isa::Space::kPsum, 0, 1, 0, 1, 1);
  const auto hb = ap(isa::Space::kHbm, 0, 1, 0, 1, 1);
  EXPECT_TRUE(check_engine_space(isa::Engine::kGpSimd, ps, Access::kRead));
  EXPECT_FALSE(check_engine_space(isa::Engine::kGpSimd, sb, Access::kWrite));
  EXPECT_FALSE(check_engine_space(isa::Engine::kVector, ps, Access::kWrite));
  EXPECT_TRUE(check_engine_space(isa::Engine::kVector, hb, Access::kRead));
  EXPECT_TRUE(check_engine_space(isa::Engine::kTensor, ps, Access::kRead));
  EXPECT_TRUE(check_engine_space(isa::Engine::kTensor, sb, Access::kWrite));
  EXPECT_FALSE(check_engine_space(isa::Engine::kTensor, ps, Access::kWrite));
  EXPECT_TRUE(check_engine_space(isa::Engine::kSync, sb, Access::kRead));
  EXPECT_TRUE(check_dma_space(ps));
  EXPECT_FALSE(check_dma_space(hb));
  EXPECT_EQ(check_engine_space(isa::Engine::kGpSimd, ps, Access::kRead)->kind,
            FaultKind::kEngineSpace);
}

TEST(AccessRules, StartPartition) {
  EXPECT_FALSE(check_start_partition(ap(isa::Space::kSbuf, 64, 64, 0, 1, 1)));
  EXPECT_FALSE(check_start_partition(ap(isa::Space::kPsum, 96, 32, 0, 1, 1)));
  EXPECT_TRUE(check_start_partition(ap(isa::Space::kSbuf, 32, 65, 0, 1, 1)));
  EXPECT_FALSE(check_start_partition(ap(isa::Space::kHbm, 8, 8, 0, 1, 1)));  // DMA rows
  const auto f = check_start_partition(ap(isa::Space::kSbuf, 16, 16, 0, 1, 1));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, FaultKind::kPartitionStart);
}

}  // namespace
}  // namespace trnsim::mem
