// Format names: every builtin's name() parses back to the same Format, the NKI / numpy aliases,
// every cFP8 layout and bias, and errors that name the bad string.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "base/error.h"
#include "numerics/format.h"

namespace trnsim::num {
namespace {

TEST(FormatNames, EveryBuiltinRoundTrips) {
  std::set<std::string> names;
  ASSERT_FALSE(builtin_formats().empty());
  for (const Format& f : builtin_formats()) {
    const std::string n = f.name();
    EXPECT_TRUE(names.insert(n).second) << "duplicate name " << n;
    EXPECT_EQ(parse_format(n), f) << n;
  }
}

TEST(FormatNames, BuiltinsCoverEveryDtypeInOrder) {
  const auto all = builtin_formats();
  // Every fixed format, cFP8 with its default bias, in Dtype order.
  const Format expected[] = {fp64(),
                             fp32(),
                             tf32(),
                             bf16(),
                             fp16(),
                             fp8_e4m3(),
                             fp8_e4m3fn(),
                             fp8_e5m2(),
                             fp8_e3m4(),
                             cfp8(),
                             fp4_e2m1(),
                             e8m0(),
                             int_format(Dtype::kInt8),
                             int_format(Dtype::kInt16),
                             int_format(Dtype::kInt32),
                             int_format(Dtype::kUint8),
                             int_format(Dtype::kUint16),
                             int_format(Dtype::kUint32)};
  ASSERT_EQ(all.size(), std::size(expected));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], expected[i]) << i;
}

TEST(FormatNames, CanonicalNames) {
  EXPECT_EQ(fp32().name(), "fp32");
  EXPECT_EQ(tf32().name(), "tf32");
  EXPECT_EQ(bf16().name(), "bf16");
  EXPECT_EQ(fp16().name(), "fp16");
  EXPECT_EQ(fp8_e4m3().name(), "fp8_e4m3");
  EXPECT_EQ(fp8_e4m3fn().name(), "fp8_e4m3fn");
  EXPECT_EQ(fp8_e5m2().name(), "fp8_e5m2");
  EXPECT_EQ(fp8_e3m4().name(), "fp8_e3m4");
  EXPECT_EQ(cfp8(5, 18).name(), "cfp8_e5m2_b18");
  EXPECT_EQ(int_format(Dtype::kUint16).name(), "uint16");
}

TEST(FormatNames, Aliases) {
  EXPECT_EQ(parse_format("bfloat16"), bf16());
  EXPECT_EQ(parse_format("float32"), fp32());
  EXPECT_EQ(parse_format("tfloat32"), tf32());
  EXPECT_EQ(parse_format("float16"), fp16());
  EXPECT_EQ(parse_format("float8_e4m3"), fp8_e4m3());  // NKI's legacy e4m3
  EXPECT_EQ(parse_format("float8_e4m3fn"), fp8_e4m3fn());
  EXPECT_EQ(parse_format("float8_e5m2"), fp8_e5m2());
  EXPECT_EQ(parse_format("float8_e8m0fnu"), e8m0());
  EXPECT_EQ(parse_format("float4_e2m1fn"), fp4_e2m1());
  EXPECT_EQ(parse_format("uint8"), int_format(Dtype::kUint8));
  EXPECT_EQ(parse_format("int8"), int_format(Dtype::kInt8));
  EXPECT_EQ(parse_format("int16"), int_format(Dtype::kInt16));
  EXPECT_EQ(parse_format("int32"), int_format(Dtype::kInt32));
  EXPECT_EQ(parse_format("uint32"), int_format(Dtype::kUint32));
  EXPECT_EQ(parse_format("cfp8"), cfp8());
  EXPECT_EQ(parse_format("cfp8_e4m3"), cfp8(4));
  // Without a bias, each layout takes its fnuz default 2^(exp_bits-1), by name or by cfp8().
  const Format e5 = parse_format("cfp8_e5m2");
  EXPECT_EQ(e5.dtype, Dtype::kCfp8);
  EXPECT_EQ(e5.exp_bits, 5);
  EXPECT_EQ(e5.bias, 16);
  EXPECT_EQ(e5, cfp8(5));
  EXPECT_EQ(cfp8(4).bias, 8);
  EXPECT_EQ(parse_format(e5.name()), e5);
  EXPECT_THROW(cfp8(4, -2), InputError);
}

TEST(FormatNames, EveryCfp8LayoutAndBias) {
  for (int e : {4, 5}) {
    for (int b = 0; b <= 63; ++b) {
      const Format f = cfp8(e, b);
      EXPECT_EQ(f.exp_bits, e);
      EXPECT_EQ(f.bias, b);
      EXPECT_EQ(parse_format(f.name()), f) << f.name();
      const std::string n =
          std::string(e == 4 ? "cfp8_e4m3" : "cfp8_e5m2") + "_b" + std::to_string(b);
      EXPECT_EQ(parse_format(n), f) << n;
    }
  }
  EXPECT_EQ(parse_format("cfp8_b20"), cfp8(4, 20));
}

void expect_rejected(const std::string& bad) {
  try {
    (void)parse_format(bad);
    ADD_FAILURE() << "'" << bad << "' was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos)
        << "the message does not name '" << bad << "': " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "'" << bad << "' threw something other than InputError: " << e.what();
  }
}

TEST(FormatNames, UnknownNamesThrowInputErrorNamingTheString) {
  for (const char* bad :
       {"fp7", "", "BF16x", "float8", "fp8_e4m3fnuzz", "cfp8_e6m1", "cfp8_e4m3_b-1", "cfp8_e4m3_b",
        "int64", "bf16 ", "fp8_e4m3_b7", "cfp8_e4m3_bx"}) {
    expect_rejected(bad);
  }
}

// A well-formed cFP8 name with a bias outside 0..63 is a bad name too: the error must name the
// string the user wrote, not only the bias.
TEST(FormatNames, OutOfRangeCfp8BiasNamesTheString) {
  for (const char* bad : {"cfp8_b64", "cfp8_e5m2_b1000", "cfp8_e4m3_b99"}) expect_rejected(bad);
}

TEST(FormatNames, BadCfp8ArgumentsThrow) {
  EXPECT_THROW(cfp8(3, 8), InputError);
  EXPECT_THROW(cfp8(4, 64), InputError);
  EXPECT_THROW(cfp8(5, -2), InputError);  // -1 is "the layout's default", other negatives are not
  EXPECT_EQ(cfp8(5, -1).bias, 16);
  EXPECT_EQ(cfp8(4, -1).bias, 8);
}

}  // namespace
}  // namespace trnsim::num
