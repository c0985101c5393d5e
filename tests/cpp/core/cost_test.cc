// Cost functions against the published formulas (HARDWARE.md s8.1), evaluated by hand from the
// spec values: independent of the code under test, which reads them from CoreSpec.
#include "core/cost/cost.h"

#include <gtest/gtest.h>

#include "core/timing_test_util.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

Cost cost(const isa::Instruction& ins, const std::string& gen = "trn2") {
  return instruction_cost(ins, chip(gen).core);
}

TEST(CostMatmul, MovingColumnsWithTheInitLatencyFloor) {
  EXPECT_EQ(cost(matmul(psum(128, 512), sbuf(128, 512))).ii, 512u);
  EXPECT_EQ(cost(matmul(psum(128, 32), sbuf(128, 32))).ii, 64u);  // MM_INIT_LATENCY
  // A short stationary (M = 16 < 64) lowers the floor: max(min(64, M), N).
  EXPECT_EQ(cost(matmul(psum(16, 32), sbuf(128, 32))).ii, 32u);
  // Latency adds the static overhead (100) and the access setup (60).
  EXPECT_EQ(cost(matmul(psum(128, 512), sbuf(128, 512))).latency, 512u + 160u);
  EXPECT_TRUE(cost(matmul(psum(128, 512), sbuf(128, 512))).waits_background);
}

TEST(CostMatmul, Fp32IsFourTimesSlower) {
  for (const char* gen : {"trn1", "trn2", "trn3"}) {
    EXPECT_EQ(cost(matmul(psum(128, 512), sbuf(128, 512, num::fp32())), gen).ii, 2048u) << gen;
    EXPECT_EQ(cost(matmul(psum(128, 16), sbuf(128, 16, num::fp32())), gen).ii, 256u) << gen;
  }
}

TEST(CostMatmul, DoubleRowFp8TakesTheBf16Time) {
  isa::Instruction fp8 = matmul(psum(128, 512), sbuf(128, 2 * 512, num::fp8_e4m3()));
  fp8.p.perf_mode = isa::MatmulPerfMode::kDoubleRowFp8;
  EXPECT_EQ(cost(fp8).ii, 512u);
  // NC-v4 has the mode (nki.isa.nc_matmul) but streams non-MX FP8 at the BF16 rate (AG4,
  // matmul_rate.fp8 = 1): K = 256 takes two passes' time.
  EXPECT_EQ(cost(fp8, "trn3").ii, 1024u);
  // ... while doing twice the FLOPs: K = 256.
  EXPECT_DOUBLE_EQ(tensor_flops(fp8, chip("trn2").core), 2.0 * 128 * 256 * 512);
  EXPECT_DOUBLE_EQ(tensor_flops(matmul(psum(128, 512), sbuf(128, 512)), chip("trn2").core),
                   2.0 * 128 * 128 * 512);
}

TEST(CostMatmul, LoadStationaryIsAQuarterOnTheBackgroundUnit) {
  const Cost c = cost(load_stationary(sbuf(128, 128)));
  EXPECT_EQ(c.ii, 32u);
  EXPECT_EQ(c.unit, Unit::kBackground);
}

TEST(CostMatmul, TransposePe) {
  const auto tp = [](int p, int64_t f, num::Format fmt, bool exact) {
    isa::Instruction t = make(Opcode::kTransposePe, Engine::kTensor,
                              {psum(static_cast<int>(f), p), sbuf(p, f, fmt)});
    t.p.transpose = exact;
    return t;
  };
  EXPECT_EQ(cost(tp(128, 128, num::bf16(), false)).ii, 128u);  // max(P, min(64, F))
  EXPECT_EQ(cost(tp(32, 16, num::bf16(), false)).ii, 32u);
  EXPECT_EQ(cost(tp(16, 128, num::bf16(), false)).ii, 64u);
  EXPECT_EQ(cost(tp(128, 128, num::fp32(), true), "trn2").ii, 256u);  // 4x, halved (AG3)
  EXPECT_EQ(cost(tp(128, 128, num::fp32(), true), "trn1").ii, 512u);  // no bit-exact path
}

TEST(CostVector, OneInputOpsAndPerformanceModes) {
  const auto copy = [](isa::AccessPattern d, isa::AccessPattern s) {
    return unary(Opcode::kTensorCopy, Engine::kVector, d, s);
  };
  EXPECT_EQ(cost(copy(sbuf(128, 10), sbuf(128, 10)), "trn1").ii, 64u);  // MIN_II
  EXPECT_EQ(cost(copy(sbuf(128, 4096), sbuf(128, 4096)), "trn1").ii, 4096u);
  EXPECT_EQ(cost(copy(sbuf(128, 4096), sbuf(128, 4096)), "trn2").ii, 1024u);  // 4x: 512 lanes
  EXPECT_EQ(cost(copy(sbuf(128, 4096), psum(128, 4096, num::bf16())), "trn2").ii, 2048u);  // 2x
  EXPECT_EQ(cost(copy(sbuf(128, 4096, num::fp32()), sbuf(128, 4096, num::fp32())), "trn2").ii,
            4096u);  // no mode for fp32
  isa::AccessPattern strided = sbuf(128, 4096);
  strided.dims[0].stride = 2;
  EXPECT_EQ(cost(copy(sbuf(128, 4096), strided), "trn2").ii, 2048u);
}

TEST(CostVector, AnInnermostStrideOver16BytesHalvesThePort) {
  // HARDWARE.md s3 (AG2): each element then takes two port cycles.
  const auto f32 = num::fp32();
  const auto copy = [](isa::AccessPattern d, isa::AccessPattern s) {
    return unary(Opcode::kTensorCopy, Engine::kVector, d, s);
  };
  const auto with_stride = [](isa::AccessPattern ap, int64_t stride) {
    ap.dims[0].stride = stride;
    return ap;
  };
  const isa::AccessPattern dst = sbuf(128, 1024, f32);
  EXPECT_EQ(cost(copy(dst, with_stride(sbuf(128, 1024, f32), 4)), "trn1").ii, 1024u);  // 16 B
  EXPECT_EQ(cost(copy(dst, with_stride(sbuf(128, 1024, f32), 5)), "trn1").ii, 2048u);  // 20 B
  EXPECT_EQ(cost(copy(dst, with_stride(sbuf(128, 1024, f32), -8)), "trn1").ii, 2048u);
  EXPECT_EQ(cost(copy(dst, with_stride(sbuf(128, 1024, f32), 0)), "trn1").ii, 1024u);  // bcast
  EXPECT_EQ(cost(copy(with_stride(sbuf(128, 1024, f32), 8), sbuf(128, 1024, f32)), "trn1").ii,
            2048u);  // the write port too
  // A [P, 1024, 1] view: the innermost dim has one element, the next one is streamed.
  isa::AccessPattern col = sbuf(128, 1, f32);
  col.ndim = 2;
  col.dims[0] = {1, 1024};
  col.dims[1] = {64, 1};
  EXPECT_EQ(cost(copy(dst, col), "trn1").ii, 1024u);
  col.dims[0] = {64, 1024};
  EXPECT_EQ(cost(copy(dst, col), "trn1").ii, 2048u);
  // ScalarE streams through the same ports.
  EXPECT_EQ(
      cost(unary(Opcode::kActivation, Engine::kScalar, dst, with_stride(sbuf(128, 1024, f32), 32)),
           "trn1")
          .ii,
      2048u);
}

TEST(CostVector, DependentLatencyIsStaticOverheadWithTheMeasuredFloor) {
  // VectorE / ScalarE: ii + 100 (AG2), at least the 264-cycle turnaround (PG).
  const auto f32 = num::fp32();
  const Cost small = cost(
      unary(Opcode::kTensorCopy, Engine::kVector, sbuf(128, 10, f32), sbuf(128, 10, f32)), "trn1");
  EXPECT_EQ(small.ii, 64u);
  EXPECT_EQ(small.latency, 264u);
  const Cost large =
      cost(unary(Opcode::kTensorCopy, Engine::kVector, sbuf(128, 1000, f32), sbuf(128, 1000, f32)),
           "trn1");
  EXPECT_EQ(large.latency, 1100u);
}

TEST(CostVector, TwoInputOps) {
  const auto tt = [](isa::AccessPattern d, isa::AccessPattern a, isa::AccessPattern b) {
    isa::Instruction t = make(Opcode::kTensorTensor, Engine::kVector, {d, a, b});
    t.p.op0 = isa::AluOp::kAdd;
    return t;
  };
  const auto f32 = num::fp32();
  EXPECT_EQ(cost(tt(sbuf(128, 1024, f32), sbuf(128, 1024, f32), sbuf(128, 1024, f32))).ii, 2048u);
  EXPECT_EQ(cost(tt(sbuf(128, 1024, f32), psum(128, 1024), sbuf(128, 1024, f32))).ii, 1024u);
  EXPECT_EQ(cost(tt(sbuf(128, 1024), sbuf(128, 1024), sbuf(128, 1024)), "trn1").ii, 1024u);
  EXPECT_EQ(cost(tt(sbuf(128, 1024), sbuf(128, 1024), sbuf(128, 1024)), "trn2").ii, 512u);
  EXPECT_EQ(cost(tt(sbuf(128, 8, f32), sbuf(128, 8, f32), sbuf(128, 8, f32))).ii, 64u);
  // The v2 table's one-pass rule names bf16 alone (ISA-OLD): fp16 streams twice.
  const auto f16 = num::fp16();
  EXPECT_EQ(cost(tt(sbuf(128, 1024, f16), sbuf(128, 1024, f16), sbuf(128, 1024, f16)), "trn1").ii,
            2048u);
}

TEST(CostVector, TableEntries) {
  const auto f32 = num::fp32();
  const auto op = [&](Opcode o, int64_t n_out, int64_t n_in) {
    return unary(o, Engine::kVector, sbuf(128, n_out, f32), sbuf(128, n_in, f32));
  };
  EXPECT_EQ(cost(op(Opcode::kBnAggr, 2, 24)).ii, 104u);         // 13 x 24 / 3
  EXPECT_EQ(cost(op(Opcode::kReciprocal, 100, 100)).ii, 800u);  // 8 N
  EXPECT_EQ(cost(op(Opcode::kMax8, 8, 1000)).ii, 1000u);        // N
  EXPECT_EQ(cost(op(Opcode::kTensorReduce, 1, 1000)).ii, 1000u);
  EXPECT_EQ(cost(op(Opcode::kExponential, 1024, 1024), "trn3").ii, 256u);  // 4x ScalarE exp
  // nc_stream_shuffle: max(MIN_II, N) VectorE cycles (NKI API reference), every generation.
  EXPECT_EQ(cost(op(Opcode::kStreamShuffle, 1000, 1000)).ii, 1000u);
  EXPECT_EQ(cost(op(Opcode::kStreamShuffle, 10, 10), "trn1").ii, 64u);
  // tensor_scalar_cumulative: one streamed input like tensor_scalar, max(MIN_II, N) (the API
  // reference gives no cost; docs/nki.md).
  EXPECT_EQ(cost(op(Opcode::kTensorScalarCumulative, 1000, 1000)).ii, 1000u);
  isa::Instruction tsr = make(Opcode::kTensorScalarReduce, Engine::kVector,
                              {sbuf(128, 10, f32), sbuf(128, 1, f32), sbuf(128, 10, f32)});
  EXPECT_EQ(cost(tsr).ii, 128u);  // max(MIN_II, N) + MIN_II
  isa::Instruction zero = make(Opcode::kMemset, Engine::kVector, {sbuf(128, 1000)});
  EXPECT_EQ(cost(zero, "trn1").ii, 500u);  // N/2 for a zero bf16 fill
  zero.p.value = 1.0;
  EXPECT_EQ(cost(zero, "trn1").ii, 1000u);
}

TEST(CostScalarGpSimd, PublishedEntries) {
  const auto f32 = num::fp32();
  EXPECT_EQ(
      cost(unary(Opcode::kActivation, Engine::kScalar, sbuf(128, 1000, f32), sbuf(128, 1000, f32)))
          .ii,
      1000u);
  EXPECT_EQ(cost(make(Opcode::kActivationReduce, Engine::kScalar,
                      {sbuf(128, 1000, f32), sbuf(128, 1, f32), sbuf(128, 1000, f32)}))
                .ii,
            1064u);
  // NC-v4 ScalarE 2x BF16 mode for tensor_copy (AG4), not on NC-v3.
  const auto act_copy =
      unary(Opcode::kTensorCopy, Engine::kScalar, sbuf(128, 1000), sbuf(128, 1000));
  EXPECT_EQ(cost(act_copy, "trn3").ii, 500u);
  EXPECT_EQ(cost(act_copy, "trn2").ii, 1000u);
  // GpSimd: GPSIMD_START + N, no static overhead on top.
  const Cost iota = cost(make(Opcode::kIota, Engine::kGpSimd, {sbuf(128, 512, f32)}));
  EXPECT_EQ(iota.ii, 662u);
  EXPECT_EQ(iota.latency, 662u);
  // The index ops: GPSIMD_START (150) + one cycle per element written; nc_n_gather is
  // ceil(n / 512) instructions, each paying the start (NKI API reference), whatever data's size.
  const auto u32 = num::int_format(num::Dtype::kUint32);
  EXPECT_EQ(cost(make(Opcode::kNGather, Engine::kGpSimd,
                      {sbuf(128, 1000, f32), sbuf(128, 8000, f32), sbuf(128, 1000, u32)}))
                .ii,
            2 * 150u + 1000u);
  EXPECT_EQ(
      cost(make(Opcode::kSequenceBounds, Engine::kGpSimd, {sbuf(1, 1024, f32), sbuf(1, 512, f32)}))
          .ii,
      150u + 1024u);
  // activate2 prices as activation, activate2_reduce as activation_reduce (assumption).
  EXPECT_EQ(
      cost(unary(Opcode::kActivate2, Engine::kScalar, sbuf(128, 1000), sbuf(128, 1000)), "trn3").ii,
      cost(unary(Opcode::kActivation, Engine::kScalar, sbuf(128, 1000), sbuf(128, 1000)), "trn3")
          .ii);
}

TEST(CostControl, DmaTriggerPaysDgeWhereItExists) {
  const auto d = dma_copy(sbuf(4, 4096), hbm(4, 4096, num::bf16()));
  EXPECT_EQ(cost(d, "trn2").ii, 720u);  // 600 ns x 1.2 GHz
  EXPECT_EQ(cost(d, "trn1").ii, 1u);    // descriptors prebuilt: one sequencer cycle
  EXPECT_EQ(cost(make(Opcode::kNop, Engine::kSync, {})).ii, 1u);
}

}  // namespace
}  // namespace trnsim::core
