// Numbers for people (arch/number_format.h): separators, trimming, sign, non-finite values.
#include "arch/number_format.h"

#include <gtest/gtest.h>

#include <limits>

namespace trnsim::arch {
namespace {

TEST(NumberFormat, SeparatesThousandsInTheIntegerPartOnly) {
  EXPECT_EQ(format_number(0, 2), "0");
  EXPECT_EQ(format_number(999, 0), "999");
  EXPECT_EQ(format_number(1000, 3), "1,000");
  EXPECT_EQ(format_number(1234567.125, 3), "1,234,567.125");
  EXPECT_EQ(format_number(123456.5, 2), "123,456.5");
  EXPECT_EQ(format_number(0.123456, 4), "0.1235");
}

TEST(NumberFormat, SignUnlessTheDigitsRoundToZero) {
  EXPECT_EQ(format_number(-1234, 0), "-1,234");
  EXPECT_EQ(format_number(-0.75, 2), "-0.75");
  EXPECT_EQ(format_number(-0.001, 2), "0");
  EXPECT_EQ(format_number(-0.0, 2), "0");
}

TEST(NumberFormat, NonFiniteAndUnits) {
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_bandwidth(2900), "2.9 TB/s");
  EXPECT_EQ(format_bandwidth(384), "384 GB/s");
}

}  // namespace
}  // namespace trnsim::arch
