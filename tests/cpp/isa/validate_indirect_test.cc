// The rules of dma_gather / dma_scatter (ShapeRule::kDmaIndirect): the table is evenly spaced
// rows of one tensor, the SBUF side [P, F] with F the table's row elements, offsets [P, 1]
// int32 / uint32 in SBUF, GpSimd triggers (software DGE), and the text form round-trips.
#include "base/error.h"
#include "isa/disassembler.h"
#include "validate_util.h"

namespace trnsim::isa {
namespace {

const std::string kPool = ".engine pool\n";
const std::string kOff = ", sbuf[0:4]+4096 [[1,1]] int32";

std::string gather(const std::string& dst, const std::string& table,
                   const std::string& offsets = kOff) {
  return kPool + "dma_gather " + dst + " <- " + table + offsets + "\n";
}

TEST(ValidateIndirect, GatherAndScatterOverWholeTables) {
  for (const char* g : {"trn1", "trn2", "trn3"}) {
    EXPECT_LEGAL(g, gather("sbuf[0:4] [[1,512]] bf16", "A[0:128] [[1,512]]"));
    // Some columns of each row, a cast, uint32 row numbers.
    EXPECT_LEGAL(g, gather("sbuf[0:4] [[1,64]] fp32", "A[0:128]+64 [[1,64]]",
                           ", sbuf[0:4]+4096 [[1,1]] uint32"));
    EXPECT_LEGAL(g, kPool + "dma_scatter B[0:128] [[1,512]] <- sbuf[0:4] [[1,512]] fp32" + kOff +
                        " queue=2\n");
    // A scatter that adds (NKI atomic_rmw): bf16 or fp32, the same on both sides.
    EXPECT_LEGAL(g, kPool + "dma_scatter B[0:128] [[1,512]] <- sbuf[0:4] [[1,512]] fp32" + kOff +
                        " accumulate=true\n");
    EXPECT_ONLY_RULE(g,
                     kPool + "dma_scatter B[0:128] [[1,512]] <- sbuf[0:4] [[1,512]] bf16" + kOff +
                         " accumulate=true\n",
                     kDtype);
  }
}

TEST(ValidateIndirect, TheTableIsEvenlySpacedRowsOfOneTensor) {
  const std::string dst = "sbuf[0:4] [[1,512]] bf16";
  // Rows of a part of the tensor: half of them, from row 1, every other row (s[k, idx]).
  EXPECT_LEGAL("trn2", gather(dst, "A[0:64] [[1,512]]"));
  EXPECT_LEGAL("trn2", gather(dst, "A[0:127]+512 [[1,512]]"));
  EXPECT_LEGAL("trn2", gather(dst, "A[0:64:1024] [[1,512]]"));
  EXPECT_RULE("trn2", gather(dst, "A[0:128]+512 [[1,512]]"), kHbmRange);  // past the end
  EXPECT_ONLY_RULE("trn2", gather(dst, "A[0:4:0] [[1,512]]"), kShape);    // one row, 4 times
  EXPECT_ONLY_RULE("trn2", gather("sbuf[0:4] [[1,256]] bf16", "A[0:128] [[1,512]]"), kShape);
  EXPECT_RULE("trn2", gather(dst, "sbuf[0:128] [[1,512]] bf16"), kSpace);  // not in HBM
  EXPECT_RULE("trn2", kPool + "dma_gather A[0:128] [[1,512]] <- A[0:128] [[1,512]]" + kOff + "\n",
              kSpace);  // HBM to HBM
}

TEST(ValidateIndirect, OffsetsAreOneIntegerPerPartition) {
  const std::string dst = "sbuf[0:4] [[1,512]] bf16", table = "A[0:128] [[1,512]]";
  EXPECT_ONLY_RULE("trn2", gather(dst, table, ", sbuf[0:4]+4096 [[1,1]] fp32"), kDtype);
  EXPECT_ONLY_RULE("trn2", gather(dst, table, ", sbuf[0:4]+4096 [[1,1]] int16"), kDtype);
  EXPECT_ONLY_RULE("trn2", gather(dst, table, ", sbuf[0:4]+4096 [[1,2]] int32"), kShape);
  EXPECT_ONLY_RULE("trn2", gather(dst, table, ", sbuf[0:8]+4096 [[1,1]] int32"), kShape);
  EXPECT_RULE("trn2", gather(dst, table, ", A[0:4] [[1,1]] int32"), kSpace);
}

TEST(ValidateIndirect, SoftwareDgeOnGpSimdAndTheQueue) {
  // The assembler refuses it on another stream; a built program is validated.
  const std::string g = gather("sbuf[0:4] [[1,512]] bf16", "A[0:128] [[1,512]]");
  EXPECT_THROW(
      assemble(std::string(testing_util::kPrelude) + ".engine sp\n" + g.substr(kPool.size()), "t"),
      InputError);
  Program p = assemble(std::string(testing_util::kPrelude) + g, "t.trn");
  Instruction in = p.stream(Engine::kGpSimd)[0];
  p.stream(Engine::kGpSimd).clear();
  in.engine = Engine::kSync;
  p.append(in);
  EXPECT_TRUE(testing_util::has(testing_util::check("trn2", p), RuleKind::kEngine));
  EXPECT_ONLY_RULE(
      "trn2",
      kPool + "dma_gather sbuf[0:4] [[1,512]] bf16 <- A[0:128] [[1,512]]" + kOff + " queue=256\n",
      kDmaQueue);
  // No accumulate: the assembler refuses it, validation reports it in a built program.
  EXPECT_THROW(assemble(std::string(testing_util::kPrelude) + g.substr(0, g.size() - 1) +
                            " accumulate=true\n",
                        "t"),
               InputError);
  p.stream(Engine::kSync)[0].engine = Engine::kGpSimd;
  p.stream(Engine::kGpSimd).push_back(p.stream(Engine::kSync)[0]);
  p.stream(Engine::kSync).clear();
  p.stream(Engine::kGpSimd)[0].p.dma_accumulate = true;
  EXPECT_TRUE(testing_util::has(testing_util::check("trn2", p), RuleKind::kMalformed));
}

TEST(ValidateIndirect, TextRoundTrip) {
  const std::string text = std::string(testing_util::kPrelude) +
                           gather("sbuf[0:4] [[1,64]] fp32", "A[0:128]+64 [[1,64]]") + kPool +
                           "dma_scatter B[0:128] [[1,512]] <- sbuf[0:4] [[1,512]] fp32, "
                           "sbuf[0:4]+4096 [[1,1]] uint32 queue=2 rounding=rz\n";
  const Program p = assemble(text, "t.trn");
  const auto& pool = p.stream(Engine::kGpSimd);
  ASSERT_EQ(pool.size(), 2u);
  EXPECT_EQ(pool[0].op, Opcode::kDmaGather);
  EXPECT_EQ(pool[0].num_operands, 3);
  EXPECT_EQ(pool[0].operands[1].num_partitions, 128);
  EXPECT_EQ(pool[0].operands[1].partition_stride, 512);
  EXPECT_EQ(pool[1].op, Opcode::kDmaScatter);
  EXPECT_EQ(pool[1].operands[2].dtype, num::int_format(num::Dtype::kUint32));
  const std::string out = disassemble(p);
  EXPECT_TRUE(assemble(out, "again") == p) << out;
  EXPECT_EQ(disassemble(assemble(out, "again")), out);
  EXPECT_NE(out.find("dma_gather sbuf[0:4] [[1,64]] fp32 <- A[0:128]+64 [[1,64]] bf16, "
                     "sbuf[0:4]+4096 [[1,1]] int32"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace trnsim::isa
