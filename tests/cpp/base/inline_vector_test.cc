// InlineVector keeps the first N elements in the object and all of them on the heap beyond;
// LargeAllocator puts blocks of 2 MiB and more on 2 MiB boundaries. Both must behave like
// std::vector / std::allocator to their users.
#include "base/inline_vector.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "base/large_allocator.h"

namespace trnsim {
namespace {

struct Pair {
  uint16_t a = 0;
  int64_t b = 0;
  bool operator==(const Pair&) const = default;
};

TEST(InlineVector, GrowsPastItsInlineCapacityKeepingOrder) {
  InlineVector<Pair, 2> v;
  EXPECT_TRUE(v.empty());
  std::vector<Pair> ref;
  for (int i = 0; i < 7; ++i) {
    const Pair p{static_cast<uint16_t>(i), -i * 1000};
    v.push_back(p);
    ref.push_back(p);
    ASSERT_EQ(v.size(), ref.size());
    EXPECT_EQ(v.back(), p);
    EXPECT_TRUE(std::equal(v.begin(), v.end(), ref.begin(), ref.end())) << "after " << i + 1;
  }
  EXPECT_EQ(v[3], (Pair{3, -3000}));
  v[3].b = 5;
  EXPECT_EQ(v.data()[3].b, 5);
}

TEST(InlineVector, CopiesAndMovesAreIndependent) {
  for (int n : {1, 2, 3, 6}) {
    SCOPED_TRACE(n);
    InlineVector<Pair, 2> a;
    for (int i = 0; i < n; ++i) a.push_back({static_cast<uint16_t>(i), i});
    InlineVector<Pair, 2> b = a;
    EXPECT_EQ(a, b);
    b[0].b = 99;
    EXPECT_NE(a, b);
    EXPECT_EQ(a[0].b, 0);
    const InlineVector<Pair, 2> c = std::move(b);
    EXPECT_EQ(c.size(), static_cast<size_t>(n));
    EXPECT_EQ(c[0].b, 99);
  }
}

TEST(InlineVector, ClearEqualityAndSpan) {
  InlineVector<Pair, 2> a{{1, 1}, {2, 2}, {3, 3}};
  InlineVector<Pair, 2> b{{1, 1}, {2, 2}};
  EXPECT_NE(a, b);  // same prefix, different length
  b.push_back({3, 3});
  EXPECT_EQ(a, b);
  const std::span<const Pair> s(a);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[2], (Pair{3, 3}));
  a.clear();
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.begin(), a.end());
  a.push_back({4, 4});  // inline again after a clear
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0], (Pair{4, 4}));
}

TEST(LargeAllocator, LargeBlocksAreHugePageAlignedAndKeepTheirContents) {
  std::vector<int64_t, LargeAllocator<int64_t>> v;
  std::vector<int64_t> ref;
  // Grows from small blocks (plain new) through the 2 MiB threshold (aligned, advised).
  for (int64_t i = 0; i < (int64_t{3} << 20) / 8; ++i) {
    v.push_back(i * 7);
    ref.push_back(i * 7);
  }
  EXPECT_TRUE(std::equal(v.begin(), v.end(), ref.begin(), ref.end()));
#if defined(__linux__)
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePageBytes, 0u);
#endif
  std::vector<int64_t, LargeAllocator<int64_t>> small(10, 3);
  EXPECT_EQ(std::accumulate(small.begin(), small.end(), int64_t{0}), 30);
}

}  // namespace
}  // namespace trnsim
