// The rules of find_index8 / match_replace8 (ShapeRule::kFindIndex8, kMatchReplace8): 8 values
// and 8 positions per partition, uint16 / uint32 positions, data of up to 16384 elements, the
// partitions of data throughout, VectorE only.
#include "base/error.h"
#include "validate_util.h"

namespace trnsim::isa {
namespace {

const std::string kDve = ".engine dve\n";

std::string find8(const std::string& dst, const std::string& data, const std::string& vals) {
  return kDve + "find_index8 " + dst + " <- " + data + ", " + vals + "\n";
}
std::string replace8(const std::string& dst, const std::string& idx, const std::string& data,
                     const std::string& vals) {
  return kDve + "match_replace8 " + dst + ", " + idx + " <- " + data + ", " + vals +
         " value=-inf\n";
}

const std::string kData = "sbuf[0:128] [[1,512]] bf16", kVals = "sbuf[0:128]+2048 [[1,8]] bf16";
const std::string kIdx = "sbuf[0:128]+4096 [[1,8]] uint32";
const std::string kOut = "sbuf[0:128]+8192 [[1,512]] bf16";

TEST(ValidateMatch8, LegalOnEveryGeneration) {
  for (const char* g : {"trn1", "trn2", "trn3"}) {
    EXPECT_LEGAL(g, find8(kIdx, kData, kVals));
    EXPECT_LEGAL(g, find8("sbuf[0:128]+4096 [[1,8]] uint16", "psum[0:128] [[1,16]] fp32",
                          "sbuf[0:128]+2048 [[1,8]] fp32"));
    EXPECT_LEGAL(g, replace8(kOut, kIdx, kData, kVals));
    EXPECT_LEGAL(g, replace8(kData, "sbuf[0:128]+4096 [[1,8]] uint16", kData, kVals));  // in place
    EXPECT_LEGAL(g, replace8("sbuf[0:128]+8192 [[1,4]] fp32", kIdx, "sbuf[0:128] [[1,4]] bf16",
                             kVals));  // fewer data elements than values
  }
}

TEST(ValidateMatch8, ShapesAndDtypes) {
  EXPECT_ONLY_RULE("trn2", find8("sbuf[0:128]+4096 [[1,8]] int32", kData, kVals), kDtype);
  EXPECT_ONLY_RULE("trn2", find8("sbuf[0:128]+4096 [[1,8]] fp32", kData, kVals), kDtype);
  EXPECT_ONLY_RULE("trn2", find8("sbuf[0:128]+4096 [[1,7]] uint32", kData, kVals), kShape);
  EXPECT_ONLY_RULE("trn2", find8(kIdx, kData, "sbuf[0:128]+2048 [[1,9]] bf16"), kShape);
  EXPECT_ONLY_RULE("trn2", find8(kIdx, kData, "sbuf[0:64]+2048 [[1,8]] bf16"), kShape);
  EXPECT_ONLY_RULE("trn2", find8(kIdx, "sbuf[0:128] [[1,7]] bf16", kVals), kFreeSize);
  EXPECT_ONLY_RULE("trn2", find8(kIdx, "sbuf[0:128] [[1,16385]] bf16", kVals), kFreeSize);
  EXPECT_ONLY_RULE("trn2", replace8("sbuf[0:128]+8192 [[1,256]] bf16", kIdx, kData, kVals), kShape);
  EXPECT_ONLY_RULE("trn2", replace8(kOut, "sbuf[0:128]+4096 [[1,8]] int16", kData, kVals), kDtype);
  EXPECT_ONLY_RULE("trn2", replace8(kOut, "sbuf[0:64]+4096 [[1,8]] uint32", kData, kVals), kShape);
}

TEST(ValidateMatch8, VectorEngineOnly) {
  EXPECT_THROW(assemble(std::string(testing_util::kPrelude) + ".engine pool\n" +
                            find8(kIdx, kData, kVals).substr(kDve.size()),
                        "t"),
               InputError);
}

}  // namespace
}  // namespace trnsim::isa
