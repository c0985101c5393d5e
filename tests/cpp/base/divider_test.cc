#include "base/divider.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace trnsim {
namespace {

// The hardware divide is the oracle: every quotient must match n / d exactly.
void expect_matches(uint64_t d, uint64_t n) {
  ASSERT_EQ(Divider(d).quotient(n), n / d) << n << " / " << d;
}

// Dividends where an off-by-one shows: around multiples of d, and the range ends.
std::vector<uint64_t> edge_dividends(uint64_t d) {
  std::vector<uint64_t> v = {0, 1, d - 1, d, d + 1, UINT64_MAX, UINT64_MAX - 1, UINT64_MAX / 2};
  for (uint64_t k : {uint64_t{2}, uint64_t{3}, uint64_t{1} << 20, UINT64_MAX / d}) {
    const unsigned __int128 m = static_cast<unsigned __int128>(k) * d;
    if (m > UINT64_MAX) continue;
    const auto x = static_cast<uint64_t>(m);
    v.insert(v.end(), {x - 1, x, x + 1 == 0 ? x : x + 1});
  }
  return v;
}

TEST(Divider, MatchesHardwareDivisionAtEdges) {
  std::vector<uint64_t> divisors = {1,
                                    2,
                                    3,
                                    5,
                                    7,
                                    10,
                                    641,
                                    1'000'000'000,
                                    1'400'000,
                                    2'800'000,
                                    3'000'000,
                                    (uint64_t{1} << 32) + 1,
                                    UINT64_MAX / 3,
                                    UINT64_MAX - 1,
                                    UINT64_MAX};
  for (int b = 0; b < 64; ++b) {
    const uint64_t p = uint64_t{1} << b;
    divisors.insert(divisors.end(), {p, p + 1, p - 1 == 0 ? 1 : p - 1});
  }
  for (uint64_t d : divisors)
    for (uint64_t n : edge_dividends(d)) expect_matches(d, n);
}

TEST(Divider, MatchesHardwareDivisionOnRandomValues) {
  uint64_t x = 0x9e3779b97f4a7c15ull;  // splitmix64
  auto next = [&x] {
    uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (int i = 0; i < 2000; ++i) {
    // Divisors of every magnitude (a random value shifted down), dividends likewise.
    const uint64_t d = std::max<uint64_t>(next() >> (next() % 64), 1);
    for (int j = 0; j < 50; ++j) expect_matches(d, next() >> (next() % 64));
  }
}

}  // namespace
}  // namespace trnsim
