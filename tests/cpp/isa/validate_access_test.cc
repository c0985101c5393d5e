// One test per operand rule of HARDWARE.md s3 / s2.2 / s2.3: legal at the boundary, illegal
// one step past it.
#include "validate_util.h"

namespace trnsim::isa {
namespace {

std::string copy(const std::string& dst, const std::string& src) {
  return ".engine dve\ntensor_copy " + dst + " <- " + src + "\n";
}

TEST(ValidateAccess, StartPartitionRule) {
  const std::string s64 = "sbuf[0:64] [[1,4]] fp32";
  EXPECT_LEGAL("trn2", copy("sbuf[64:128] [[1,4]] fp32", s64));                      // 64 at 64
  EXPECT_LEGAL("trn2", copy("sbuf[0:65] [[1,4]] fp32", "sbuf[0:65] [[1,4]] fp32"));  // 65 at 0
  EXPECT_ONLY_RULE("trn2", copy("sbuf[32:65] [[1,4]] fp32", "sbuf[0:33] [[1,4]] fp32"),
                   kStartPartition);  // 33 at 32
  EXPECT_ONLY_RULE("trn2", copy("sbuf[63:128] [[1,4]] fp32", "sbuf[0:65] [[1,4]] fp32"),
                   kStartPartition);                                                    // 65 at 63
  EXPECT_LEGAL("trn2", copy("sbuf[96:128] [[1,4]] fp32", "sbuf[32:64] [[1,4]] fp32"));  // 32s
  EXPECT_ONLY_RULE("trn2", copy("sbuf[16:48] [[1,4]] fp32", "sbuf[32:64] [[1,4]] fp32"),
                   kStartPartition);
  // DMA writes each partition with its own descriptor: no start rule.
  EXPECT_LEGAL("trn2", ".engine sp\ndma_copy sbuf[5:10] [[1,512]] bf16 <- A[0:5] [[1,512]]\n");
}

TEST(ValidateAccess, PartitionRange) {
  EXPECT_LEGAL("trn1", copy("sbuf[0:128] [[1,4]] fp32", "sbuf[0:128] [[1,4]] fp32"));
  EXPECT_RULE("trn1", copy("sbuf[0:128] [[1,4]] fp32", "sbuf[1:129] [[1,4]] fp32"), kPartitions);
  EXPECT_RULE("trn1", copy("sbuf[0:0] [[1,4]] fp32", "sbuf[0:0] [[1,4]] fp32"), kPartitions);
}

TEST(ValidateAccess, FreeDimFields) {
  auto memset = [](const std::string& dims, const std::string& extra = "") {
    return ".engine dve\nmemset sbuf[0:1]" + extra + " " + dims + " uint8\n";
  };
  EXPECT_LEGAL("trn2", memset("[[1,65535]]"));
  EXPECT_ONLY_RULE("trn2", memset("[[1,65536]]"), kFreeDims);
  EXPECT_ONLY_RULE("trn2", memset("[[1,0]]"), kFreeDims);
  EXPECT_LEGAL("trn2", memset("[[32767,2]]"));
  EXPECT_ONLY_RULE("trn2", memset("[[32768,2]]"), kFreeDims);
  EXPECT_LEGAL("trn2", memset("[[-32768,2]]", "+32768"));
  EXPECT_ONLY_RULE("trn2", memset("[[-32769,2]]", "+32769"), kFreeDims);
  EXPECT_LEGAL("trn2", memset("[[1,2],[1,2],[1,2],[1,2]]"));
  Program p;  // five dims cannot be written in text
  Instruction m;
  m.op = Opcode::kMemset;
  m.engine = Engine::kVector;
  m.num_operands = 1;
  m.operands[0].ndim = 4;
  p.append(m);
  EXPECT_TRUE(testing_util::check("trn2", p).empty());
  p.stream(Engine::kVector)[0].operands[0].ndim = 5;
  EXPECT_TRUE(testing_util::has(testing_util::check("trn2", p), RuleKind::kFreeDims));
}

TEST(ValidateAccess, SbufBytesPerPartitionComeFromTheSpec) {
  auto memset = [](int64_t off) {
    return ".engine dve\nmemset sbuf[0:128]+" + std::to_string(off) + " [[1,512]] fp32\n";
  };
  // trn1: 192 KiB per partition; trn2: 224 KiB.
  EXPECT_LEGAL("trn1", memset(196608 - 2048));
  EXPECT_ONLY_RULE("trn1", memset(196608 - 2044), kBounds);
  EXPECT_LEGAL("trn2", memset(196608 - 2044));
  EXPECT_LEGAL("trn2", memset(229376 - 2048));
  EXPECT_ONLY_RULE("trn2", memset(229376 - 2044), kBounds);
  // A negative stride must not reach below the partition's first byte.
  EXPECT_LEGAL("trn2", ".engine dve\nmemset sbuf[0:1]+4 [[-1,2]] fp32\n");
  EXPECT_ONLY_RULE("trn2", ".engine dve\nmemset sbuf[0:1]+3 [[-1,2]] fp32\n", kBounds);
}

TEST(ValidateAccess, PsumBytesPerPartition) {
  EXPECT_LEGAL("trn2", ".engine dve\nmemset psum[0:128]+14336 [[1,512]] fp32\n");
  EXPECT_ONLY_RULE("trn2", ".engine dve\nmemset psum[0:128]+14340 [[1,512]] fp32\n", kBounds);
}

TEST(ValidateAccess, VectorFreeSizeFromPsum) {
  EXPECT_LEGAL("trn2", copy("sbuf[0:1] [[1,4096]] bf16", "psum[0:1] [[1,4096]] bf16"));
  EXPECT_ONLY_RULE("trn2", copy("sbuf[0:1] [[1,4097]] bf16", "psum[0:1] [[1,4097]] bf16"),
                   kFreeSize);
}

TEST(ValidateAccess, EngineSpaceRules) {
  const std::string tt =
      "tensor_tensor sbuf[0:128] [[1,4]] fp32 <- psum[0:128] [[1,4]] fp32, "
      "sbuf[0:128] [[1,4]] fp32\n";
  EXPECT_LEGAL("trn2", ".engine dve\n" + tt);
  EXPECT_ONLY_RULE("trn2", ".engine pool\n" + tt, kSpace);  // GpSimd has no PSUM access
  const std::string ls = ".engine pe\nload_stationary sbuf[0:128] [[1,128]] bf16\n";
  EXPECT_LEGAL("trn2", ls + "multiply_moving psum[0:128] [[1,512]] fp32 <- sbuf[0:128] "
                            "[[1,512]] bf16\n");
  EXPECT_RULE("trn2",
              ls + "multiply_moving psum[0:128] [[1,512]] fp32 <- psum[0:128] "
                   "[[1,512]] bf16\n",
              kSpace);  // TensorE reads SBUF only
  EXPECT_RULE("trn2",
              ls + "multiply_moving sbuf[0:128] [[1,512]] fp32 <- sbuf[0:128] "
                   "[[1,512]] bf16\n",
              kSpace);  // and writes PSUM only
  EXPECT_ONLY_RULE("trn2",
                   ".engine sp\ndma_copy B[0:128] [[1,512]] <- psum[0:128] [[1,512]] "
                   "fp32\n",
                   kSpace);  // PSUM goes through SBUF to reach HBM
}

TEST(ValidateAccess, HbmOperandsStayInsideATensor) {
  const std::string dma = ".engine sp\ndma_copy sbuf[0:128] [[1,512]] bf16 <- ";
  EXPECT_LEGAL("trn2", dma + "A[0:128] [[1,512]]\n");
  EXPECT_ONLY_RULE("trn2", dma + "A[0:128]+1 [[1,512]]\n", kHbmRange);  // 2 bytes into B
  EXPECT_ONLY_RULE("trn2", dma + "A[1:129] [[1,512]]\n", kPartitions);  // rows start at 0
}

}  // namespace
}  // namespace trnsim::isa
