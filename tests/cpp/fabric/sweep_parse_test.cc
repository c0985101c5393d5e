// `--sizes` parsing: the forms nccom-test takes, and bad sizes as InputError, never as
// std::stoll's exceptions or an overflowing product (found by fuzz_cli, docs/fuzzing.md).
#include <gtest/gtest.h>

#include <vector>

#include "base/error.h"
#include "fabric/collective.h"

namespace trnsim::fabric {
namespace {

TEST(SweepParse, Forms) {
  EXPECT_EQ(parse_size("64"), 64);
  EXPECT_EQ(parse_size("4KiB"), 4096);
  EXPECT_EQ(parse_size("1MB"), 1000000);
  EXPECT_EQ(parse_sizes("1KiB,8B"), (std::vector<int64_t>{1024, 8}));
  EXPECT_EQ(parse_sizes("8B:64B"), (std::vector<int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(parse_sizes("1:100:10"), (std::vector<int64_t>{1, 10, 100}));
  EXPECT_EQ(parse_sizes("8B:1GiB").size(), 28u);
}

TEST(SweepParse, BadSizesAreInputErrors) {
  for (const char* bad :
       {"1KiB:1MiB:x", "1:8:3x", "1:8: 3", "1:8:-2", "1:8:", "99999999999999999999",
        "9999999999999999999GiB", "1:8:99999999999999999999", "KiB", "1XB"}) {
    EXPECT_THROW(parse_sizes(bad), InputError) << bad;
  }
}

// Sizes stop at 1 TiB (more than any chip's HBM), which keeps the doubling far from overflow.
TEST(SweepParse, TheLastSizeDoesNotOverflow) {
  const std::vector<int64_t> s = parse_sizes("1:1099511627776:2");
  ASSERT_EQ(s.size(), 41u);
  EXPECT_EQ(s.back(), int64_t{1} << 40);
  EXPECT_EQ(parse_sizes("1024GiB:1024GiB").size(), 1u);
  EXPECT_THROW(parse_sizes("1:9223372036854775807"), InputError);
  EXPECT_THROW(parse_sizes("1025GiB"), InputError);
}

}  // namespace
}  // namespace trnsim::fabric
