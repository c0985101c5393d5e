// One test per instruction-level rule (HARDWARE.md s2.1, s2.2, s4, generation features):
// legal at the boundary, illegal one step past it, and the same text across generations.
#include "base/error.h"
#include "every_op_program.h"
#include "isa/disassembler.h"
#include "validate_util.h"

namespace trnsim::isa {
namespace {

const std::string kLs = ".engine pe\nload_stationary sbuf[0:128] [[1,128]] bf16\n";

std::string mm(const std::string& dst, const std::string& moving, const std::string& extra = "") {
  return "multiply_moving " + dst + " <- " + moving + extra + "\n";
}

TEST(ValidateOps, EveryOpProgramIsLegalOnTrn3Only) {
  const Program p = assemble(kEveryOpProgram, "every_op.trn");
  EXPECT_TRUE(validate(p, testing_util::chip("trn3")).empty())
      << testing_util::dump(validate(p, testing_util::chip("trn3")));
  const auto on_trn2 = validate(p, testing_util::chip("trn2"));
  EXPECT_TRUE(testing_util::has(on_trn2, RuleKind::kFeature));
  EXPECT_TRUE(testing_util::has(on_trn2, RuleKind::kDtype));  // e4m3fn MX data, bf16 PSUM
}

TEST(ValidateOps, PsumBankOnOneBankGenerations) {
  const std::string mov = "sbuf[0:128] [[1,512]] bf16";
  EXPECT_LEGAL("trn2", kLs + mm("psum[0:128]+2048 [[1,512]] fp32", mov));
  EXPECT_ONLY_RULE("trn2", kLs + mm("psum[0:128]+2052 [[1,512]] fp32", mov), kPsumBank);
  EXPECT_LEGAL("trn3", kLs + mm("psum[0:128]+2052 [[1,512]] fp32", mov));  // N up to 4096
}

TEST(ValidateOps, MatmulNLimits) {
  EXPECT_LEGAL("trn2", kLs + mm("psum[0:128] [[1,512]] fp32", "sbuf[0:128] [[1,512]] bf16"));
  EXPECT_RULE("trn2", kLs + mm("psum[0:128] [[1,513]] fp32", "sbuf[0:128] [[1,513]] bf16"),
              kMatmulShape);
  EXPECT_LEGAL("trn3", kLs + mm("psum[0:128] [[1,4096]] fp32", "sbuf[0:128] [[1,4096]] bf16"));
  EXPECT_RULE("trn3", kLs + mm("psum[0:128] [[1,4097]] fp32", "sbuf[0:128] [[1,4097]] bf16"),
              kMatmulShape);
  EXPECT_LEGAL("trn3", kLs + mm("psum[0:128] [[1,8192]] bf16", "sbuf[0:128] [[1,8192]] bf16"));
  EXPECT_RULE("trn3", kLs + mm("psum[0:128] [[1,8193]] bf16", "sbuf[0:128] [[1,8193]] bf16"),
              kMatmulShape);
  // A bf16 result needs bf16 PSUM (NC-v4).
  EXPECT_RULE("trn2", kLs + mm("psum[0:128] [[1,512]] bf16", "sbuf[0:128] [[1,512]] bf16"),
              kFeature);
}

TEST(ValidateOps, MatmulKAndM) {
  const std::string rest = mm("psum[0:128] [[1,512]] fp32", "sbuf[0:128] [[1,512]] bf16");
  EXPECT_ONLY_RULE("trn2", ".engine pe\nload_stationary sbuf[0:128] [[1,129]] bf16\n",
                   kMatmulShape);  // M = 129
  // K and M must match between the stationary and the moving/result.
  EXPECT_ONLY_RULE("trn2", ".engine pe\nload_stationary sbuf[0:64] [[1,128]] bf16\n" + rest,
                   kShape);
  EXPECT_ONLY_RULE("trn2", ".engine pe\nload_stationary sbuf[0:128] [[1,64]] bf16\n" + rest,
                   kShape);
  EXPECT_ONLY_RULE("trn2", ".engine pe\n" + rest, kShape);  // no load_stationary before
  // double_row FP8: K = 2 x 128 on NC-v3.
  const std::string dr = ".engine pe\nload_stationary sbuf[0:128] [[128,2],[1,128]] ";
  EXPECT_LEGAL("trn2", dr + "fp8_e4m3 perf_mode=double_row\n" +
                           mm("psum[0:128] [[1,512]] fp32",
                              "sbuf[0:128] [[512,2],[1,512]] "
                              "fp8_e5m2",
                              " perf_mode=double_row"));
  EXPECT_ONLY_RULE("trn1", dr + "fp8_e4m3 perf_mode=double_row\n", kFeature);
  // NC-v4 has the mode too (nki.isa.nc_matmul), at the BF16 rate (core/cost/cost_matmul.cc).
  EXPECT_LEGAL("trn3", dr + "fp8_e4m3 perf_mode=double_row\n" +
                           mm("psum[0:128] [[1,512]] fp32",
                              "sbuf[0:128] [[512,2],[1,512]] "
                              "fp8_e5m2",
                              " perf_mode=double_row"));
  EXPECT_ONLY_RULE("trn2", dr + "bf16 perf_mode=double_row\n", kDtype);
  EXPECT_ONLY_RULE("trn2",
                   ".engine pe\nload_stationary sbuf[0:128] [[1,256]] fp8_e4m3 "
                   "perf_mode=double_row\n",
                   kShape);
}

TEST(ValidateOps, MatmulInputFormats) {
  auto pair = [](const std::string& s, const std::string& m) {
    return ".engine pe\nload_stationary sbuf[0:128] [[1,128]] " + s + "\n" +
           mm("psum[0:128] [[1,512]] fp32", "sbuf[0:128] [[1,512]] " + m);
  };
  EXPECT_LEGAL("trn2", pair("fp32", "tf32"));
  EXPECT_ONLY_RULE("trn2", pair("fp32", "bf16"), kDtype);
  EXPECT_LEGAL("trn3", pair("fp8_e4m3fn", "fp8_e5m2"));
  EXPECT_ONLY_RULE("trn2", pair("fp8_e4m3fn", "fp8_e5m2"), kDtype);  // e4m3fn from NC-v4
  EXPECT_ONLY_RULE("trn3", pair("fp8_e4m3fn", "fp8_e4m3"), kDtype);  // no legacy mixing
  EXPECT_ONLY_RULE("trn2", pair("int8", "int8"), kDtype);
}

TEST(ValidateOps, PeTiles) {
  auto ls = [](int k, const std::string& tile) {
    return ".engine pe\nload_stationary sbuf[0:" + std::to_string(k) + "] [[1,32]] bf16 " + tile +
           "\n";
  };
  EXPECT_LEGAL("trn2", ls(32, "tile_rows=32 tile_row=96 tile_cols=32"));
  EXPECT_ONLY_RULE("trn1", ls(32, "tile_rows=32"), kPeTile);  // NC-v2 tiles are 128 or 64
  EXPECT_LEGAL("trn1", ls(64, "tile_rows=64 tile_row=64"));
  EXPECT_ONLY_RULE("trn1", ls(64, "tile_rows=64 tile_row=96"), kPeTile);  // past row 128
  EXPECT_ONLY_RULE("trn2", ls(32, "tile_rows=32 tile_row=16"), kPeTile);
  EXPECT_ONLY_RULE("trn2", ls(64, "tile_rows=32"), kPeTile);  // K = 64 > 32 rows
}

TEST(ValidateOps, GenerationFeatures) {
  const std::string qmx =
      ".engine dve\nquantize_mx sbuf[0:128] [[1,512]] fp8_e4m3fn, "
      "sbuf[0:128]+1024 [[1,128]] e8m0 <- sbuf[0:128]+2048 [[1,512]] bf16\n";
  EXPECT_LEGAL("trn3", qmx);
  EXPECT_ONLY_RULE("trn2", qmx, kFeature);
  const std::string ex =
      ".engine dve\nexponential sbuf[0:1] [[1,8]] fp32 <- sbuf[0:1] [[1,8]] "
      "fp32\n";
  EXPECT_LEGAL("trn3", ex);
  EXPECT_ONLY_RULE("trn2", ex, kFeature);
  const std::string dt =
      ".engine sp\ndma_transpose sbuf[0:128] [[1,128]] bf16 <- A[0:128] "
      "[[1,128]]\n";
  EXPECT_LEGAL("trn2", dt);
  EXPECT_ONLY_RULE("trn1", dt, kFeature);
  const std::string acc =
      ".engine sp\ndma_copy sbuf[0:128] [[1,512]] fp32 <- B[0:128] [[1,512]] "
      "accumulate=true\n";
  // Every generation adds into SBUF (before NC-v4 through the DMA CC engines, at half rate).
  EXPECT_LEGAL("trn3", acc);
  EXPECT_LEGAL("trn2", acc);
  EXPECT_LEGAL("trn1", acc);
  const std::string tp =
      ".engine pe\ntranspose_pe psum[0:32] [[1,64]] bf16 <- sbuf[0:64] "
      "[[1,32]] bf16 transpose=true\n";
  EXPECT_LEGAL("trn2", tp);
  EXPECT_RULE("trn1", tp, kFeature);
  arch::ChipSpec no_sr = testing_util::chip("trn2");
  no_sr.numerics.stochastic_rounding = false;
  const std::string sr =
      ".engine dve\nreciprocal sbuf[0:1] [[1,8]] bf16 <- sbuf[0:1] [[1,8]] "
      "fp32 rounding=stochastic\n";
  EXPECT_LEGAL("trn2", sr);
  const auto ds = validate(assemble(std::string(testing_util::kPrelude) + sr), no_sr);
  EXPECT_TRUE(ds.size() == 1 && ds[0].kind == RuleKind::kFeature) << testing_util::dump(ds);
}

TEST(ValidateOps, ShapesMustAgree) {
  const std::string tt =
      ".engine dve\ntensor_tensor sbuf[0:64] [[1,8]] fp32 <- sbuf[64:128] "
      "[[1,8]] fp32, sbuf[0:";
  EXPECT_LEGAL("trn2", tt + "64] [[1,8]] fp32\n");
  EXPECT_ONLY_RULE("trn2", tt + "32] [[1,8]] fp32\n", kShape);
  EXPECT_ONLY_RULE("trn2", tt + "64] [[1,9]] fp32\n", kShape);
  // DMA: equal element counts, any partition split.
  const std::string dma = ".engine sp\ndma_copy sbuf[0:64] [[1,";
  EXPECT_LEGAL("trn2", dma + "1024]] bf16 <- A[0:128] [[1,512]]\n");
  EXPECT_ONLY_RULE("trn2", dma + "1023]] bf16 <- A[0:128] [[1,512]]\n", kShape);
  const std::string tr = ".engine dve\ntranspose_dve sbuf[0:";
  EXPECT_LEGAL("trn2", tr + "32] [[1,32]] bf16 <- sbuf[0:32] [[1,32]] bf16\n");
  EXPECT_RULE("trn2", tr + "33] [[1,32]] bf16 <- sbuf[0:32] [[1,33]] bf16\n", kShape);
  // stream_shuffle: quadrant-aligned starts, source partitions that exist, masks of 0..31 / 255.
  const std::string id =
      " shuffle=0:1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21:22:23:"
      "24:25:26:27:28:29:30:31\n";
  const std::string sh = ".engine dve\nstream_shuffle sbuf[";
  EXPECT_LEGAL("trn2", sh + "0:128] [[1,8]] fp32 <- sbuf[0:128]+64 [[1,8]] fp32" + id);
  EXPECT_LEGAL("trn2", sh + "64:128] [[1,8]] fp32 <- sbuf[0:64]+64 [[1,8]] fp32" + id);
  EXPECT_RULE("trn2", sh + "16:48] [[1,8]] fp32 <- sbuf[0:32]+64 [[1,8]] fp32" + id, kShape);
  // 32 partitions at 32 are legal alone, not beside a 64-partition source (64 active).
  EXPECT_ONLY_RULE("trn2", sh + "32:64] [[1,8]] fp32 <- sbuf[0:64]+64 [[1,8]] fp32" + id, kShape);
  EXPECT_ONLY_RULE("trn2", sh + "0:64] [[1,8]] fp32 <- sbuf[0:32]+64 [[1,8]] fp32" + id, kShape);
  EXPECT_ONLY_RULE("trn2", sh + "0:32] [[1,8]] fp32 <- sbuf[0:32]+64 [[1,9]] fp32" + id, kShape);
  EXPECT_RULE("trn2", sh + "0:32] [[1,8]] bf16 <- sbuf[0:32]+64 [[1,8]] fp32" + id, kDtype);
  EXPECT_ONLY_RULE("trn2",
                   sh + "0:32] [[1,8]] fp32 <- sbuf[0:32]+64 [[1,8]] fp32 shuffle=40:1:2:3:4:5:6:"
                        "7:8:9:10:11:12:13:14:15:16:17:18:19:20:21:22:23:24:25:26:27:28:29:30:31\n",
                   kShape);
  // tensor_scalar_cumulative: a running add, subtract, mult, max or min; no 32-bit integers.
  const std::string cu = ".engine dve\ntensor_scalar_cumulative sbuf[0:64] [[1,8]] ";
  EXPECT_LEGAL("trn2", cu + "fp32 <- sbuf[0:64]+64 [[1,8]] bf16 op0=mult arg0=2 op1=add\n");
  EXPECT_ONLY_RULE("trn2", cu + "fp32 <- sbuf[0:64]+64 [[1,8]] bf16 op0=mult arg0=2 op1=divide\n",
                   kShape);
  EXPECT_ONLY_RULE("trn2", cu + "int32 <- sbuf[0:64]+64 [[1,8]] bf16 op0=mult arg0=2 op1=add\n",
                   kDtype);
  const std::string bn = ".engine dve\nbn_stats sbuf[0:128] [[1,6]] fp32 <- sbuf[0:128] [[1,";
  EXPECT_LEGAL("trn2", bn + "512]] bf16\n");
  EXPECT_ONLY_RULE("trn2", bn + "513]] bf16\n", kFreeSize);
  const std::string col =
      ".engine act\nactivation sbuf[0:128] [[1,8]] fp32 <- sbuf[0:128] "
      "[[1,8]] fp32, sbuf[0:128] [[1,";
  EXPECT_LEGAL("trn2", col + "1]] fp32 bias=@2\n");
  EXPECT_ONLY_RULE("trn2", col + "2]] fp32 bias=@2\n", kShape);  // a column is [P, 1]
}

TEST(ValidateOps, GpSimdIndexOps) {
  // nc_n_gather: data's dtype, one partition count, one index per dst element, uint32 indices.
  const std::string ng =
      ".engine pool\nn_gather sbuf[0:64] [[1,8]] bf16 <- sbuf[0:64]+64 [[1,100]] ";
  EXPECT_LEGAL("trn1", ng + "bf16, sbuf[0:64]+512 [[1,8]] uint32\n");
  EXPECT_ONLY_RULE("trn1", ng + "fp32, sbuf[0:64]+512 [[1,8]] uint32\n", kDtype);
  EXPECT_ONLY_RULE("trn1", ng + "bf16, sbuf[0:64]+512 [[1,9]] uint32\n", kShape);
  EXPECT_ONLY_RULE("trn1", ng + "bf16, sbuf[0:64]+512 [[1,8]] int16\n", kDtype);
  // local_gather: whole 16-partition cores, elems 1..32 in powers of 2, dst = indices x elems.
  const std::string lg = ".engine pool\nlocal_gather sbuf[0:32] [[1,";
  const std::string lsrc = " bf16 <- sbuf[0:32]+512 [[1,64]] bf16, sbuf[0:32]+1024 [[1,2]] uint16";
  EXPECT_LEGAL("trn2", lg + "32]]" + lsrc + "\n");  // 16 x 2 indices, 1 each
  EXPECT_LEGAL("trn2", lg + "40]]" + lsrc + " elems=4 indices=10\n");
  EXPECT_ONLY_RULE("trn2", lg + "30]]" + lsrc + " elems=3 indices=10\n", kMalformed);
  EXPECT_ONLY_RULE("trn2", lg + "33]]" + lsrc + " indices=33\n", kMalformed);  // > 32
  EXPECT_ONLY_RULE("trn2", lg + "31]]" + lsrc + "\n", kShape);
  EXPECT_RULE("trn2",
              ".engine pool\nlocal_gather sbuf[0:24] [[1,16]] bf16 <- sbuf[0:24]+512 [[1,64]] "
              "bf16, sbuf[0:24]+1024 [[1,1]] uint16\n",
              kShape);
  // sequence_bounds: one partition, a start and an end per id, fp32 / int32.
  const std::string sb = ".engine pool\nsequence_bounds sbuf[0:1] [[1,";
  EXPECT_LEGAL("trn1", sb + "64]] int32 <- sbuf[0:1]+512 [[1,32]] fp32\n");
  EXPECT_ONLY_RULE("trn1", sb + "63]] int32 <- sbuf[0:1]+512 [[1,32]] fp32\n", kShape);
  EXPECT_ONLY_RULE("trn1", sb + "64]] int32 <- sbuf[0:1]+512 [[1,32]] bf16\n", kDtype);
  // nonzero_with_count: NC-v3, one more element than src, int32 dst (the engines' start rule
  // keeps operands on 16-partition core boundaries).
  const std::string nz = ".engine pool\nnonzero_with_count sbuf[0:128] [[1,";
  EXPECT_LEGAL("trn2", nz + "9]] int32 <- sbuf[0:128]+512 [[1,8]] fp32 value=-1\n");
  EXPECT_ONLY_RULE("trn1", nz + "9]] int32 <- sbuf[0:128]+512 [[1,8]] fp32 value=-1\n", kFeature);
  EXPECT_ONLY_RULE("trn2", nz + "8]] int32 <- sbuf[0:128]+512 [[1,8]] fp32\n", kShape);
  EXPECT_ONLY_RULE("trn2", nz + "9]] fp32 <- sbuf[0:128]+512 [[1,8]] fp32\n", kDtype);
}

TEST(ValidateOps, Activate2) {
  const std::string a2 =
      ".engine act\nactivate2 sbuf[0:64] [[1,8]] bf16 <- sbuf[0:64]+64 [[1,8]] fp32 func=exp ";
  EXPECT_LEGAL("trn3", a2 + "op0=mult arg0=2 op1=subtract arg1=1 reverse1=true\n");
  EXPECT_LEGAL("trn3", a2 + "op0=subtract arg0=2 reverse0=true\n");
  EXPECT_ONLY_RULE("trn2", a2 + "op0=mult arg0=2 op1=add arg1=1\n", kFeature);
  EXPECT_ONLY_RULE("trn3", a2 + "op0=add arg0=2 op1=add arg1=1\n", kMalformed);
  EXPECT_ONLY_RULE("trn3", a2 + "op0=max arg0=2\n", kMalformed);
  const std::string r2 =
      ".engine act\nactivate2_reduce sbuf[0:64] [[1,8]] bf16, sbuf[0:64]+32 [[1,1]] fp32 <- "
      "sbuf[0:64]+64 [[1,8]] fp32 func=exp op0=mult arg0=2 reduce_op=";
  EXPECT_LEGAL("trn3", r2 + "abs_max\n");
  EXPECT_ONLY_RULE("trn3", r2 + "mult\n", kMalformed);
}

TEST(ValidateOps, RandomGeneratorWordsRangeAndState) {
  EXPECT_LEGAL("trn1", ".engine dve\nrng sbuf[0:128] [[1,8]] uint16\n");
  EXPECT_ONLY_RULE("trn1", ".engine dve\nrng sbuf[0:128] [[1,8]] fp32\n", kDtype);
  EXPECT_LEGAL("trn3", ".engine dve\nrand2 sbuf[0:128] [[1,8]] bf16 arg0=-1 arg1=1\n");
  EXPECT_ONLY_RULE("trn2", ".engine dve\nrand2 sbuf[0:128] [[1,8]] bf16 arg0=-1 arg1=1\n",
                   kFeature);
  EXPECT_LEGAL("trn2", ".engine pool\nrand_get_state sbuf[0:128] [[1,6]] uint32\n");
  EXPECT_LEGAL("trn2", ".engine dve\nrand_get_state sbuf[0:128] [[1,24]] uint32\n");
  EXPECT_ONLY_RULE("trn2", ".engine dve\nrand_get_state sbuf[0:128] [[1,6]] uint32\n", kShape);
  EXPECT_ONLY_RULE("trn2", ".engine pool\nrand_get_state sbuf[0:128] [[1,6]] int32\n", kDtype);
}

TEST(ValidateOps, QueuesSemaphoresBranches) {
  const std::string dma =
      ".engine sp\ndma_copy sbuf[0:128] [[1,512]] bf16 <- A[0:128] "
      "[[1,512]] queue=";
  EXPECT_LEGAL("trn2", dma + "255\n");  // 16 engines x 16 queues
  EXPECT_ONLY_RULE("trn2", dma + "256\n", kDmaQueue);
  EXPECT_LEGAL("trn2", ".engine act\nnop wait=s3>=1 signal=s3+1\n");
  EXPECT_ONLY_RULE("trn2", ".engine act\nnop wait=s4>=1\n", kSemaphore);
  EXPECT_LEGAL("trn2", ".engine act\nbranch target=1\n");  // the end of the stream
  EXPECT_ONLY_RULE("trn2", ".engine act\nbranch target=2\n", kControl);
  EXPECT_ONLY_RULE("trn2", ".engine act\nsem_wait\n", kMalformed);
}

TEST(ValidateOps, BuiltProgramsBreakingTheTable) {
  Program p;
  Instruction in;
  in.op = Opcode::kTensorTensor;
  in.engine = Engine::kTensor;  // not a TensorE op
  in.num_operands = 3;
  p.append(in);
  EXPECT_TRUE(testing_util::has(testing_util::check("trn2", p), RuleKind::kEngine));
  Program q;
  Instruction m;
  m.op = Opcode::kMemset;
  m.engine = Engine::kVector;
  m.num_operands = 1;
  m.p.dma_queue = 3;  // memset takes no queue: the text form would drop it
  q.append(m);
  const auto ds = testing_util::check("trn2", q);
  ASSERT_EQ(ds.size(), 1u) << testing_util::dump(ds);
  EXPECT_EQ(ds[0].kind, RuleKind::kMalformed);
  EXPECT_NE(ds[0].message.find("queue"), std::string::npos);
}

TEST(ValidateOps, ThrowIfAnyNamesFileLineAndMnemonic) {
  const auto ds = testing_util::check("trn2", ".engine act\nnop\nnop wait=s9>=1\n");
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].source_line, 6);
  EXPECT_EQ(ds[0].index, 1);
  EXPECT_EQ(ds[0].engine, Engine::kScalar);
  try {
    throw_if_any(ds, "t.trn");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "t.trn:6");
    EXPECT_EQ(e.key(), "nop");
    EXPECT_NE(e.detail().find("semaphore"), std::string::npos);
  }
  EXPECT_NO_THROW(throw_if_any({}, "t.trn"));
}

}  // namespace
}  // namespace trnsim::isa
