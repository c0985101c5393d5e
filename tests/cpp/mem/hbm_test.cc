// Device HBM: lazily paged, unwritten bytes read 0xFF, page-crossing copies, bounds.
#include "mem/hbm.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace trnsim::mem {
namespace {

TEST(Hbm, HugeCapacityCostsOnlyTouchedPages) {
  Hbm h(uint64_t{96} << 30);  // Trn2: 96 GiB
  EXPECT_EQ(h.pages_allocated(), 0u);
  std::vector<uint8_t> buf(16);
  h.read((uint64_t{90} << 30) + 5, buf.data(), buf.size());  // reads never allocate
  EXPECT_EQ(h.pages_allocated(), 0u);
  for (uint8_t b : buf) EXPECT_EQ(b, 0xFF);
  const uint8_t x = 7;
  h.write((uint64_t{95} << 30), &x, 1);
  EXPECT_EQ(h.pages_allocated(), 1u);
}

TEST(Hbm, CopiesAcrossPageBoundaries) {
  Hbm h(uint64_t{1} << 30);
  std::vector<uint8_t> in(3 * Hbm::kPageBytes + 100);
  std::iota(in.begin(), in.end(), uint8_t{0});
  const uint64_t addr = Hbm::kPageBytes - 37;
  h.write(addr, in.data(), in.size());
  std::vector<uint8_t> out(in.size() + 2);
  h.read(addr - 1, out.data(), out.size());
  EXPECT_EQ(out.front(), 0xFF);  // before the write: untouched byte of a touched page
  EXPECT_EQ(out.back(), 0xFF);
  EXPECT_TRUE(std::equal(in.begin(), in.end(), out.begin() + 1));
  h.fill(addr + 10, 0x00, 5);
  uint8_t b = 1;
  h.read(addr + 12, &b, 1);
  EXPECT_EQ(b, 0);
}

TEST(Hbm, Contains) {
  Hbm h(1000);
  EXPECT_TRUE(h.contains(0, 1000));
  EXPECT_TRUE(h.contains(1000, 0));
  EXPECT_FALSE(h.contains(999, 2));
  EXPECT_FALSE(h.contains(UINT64_MAX, 2));  // no wrap-around
}

}  // namespace
}  // namespace trnsim::mem
