// Run-time faults: typed, collected (never thrown), naming the instruction, space and range,
// and the faulting instruction writes nothing.
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

TEST(Faults, OutOfRangePartitionNamesTheInstruction) {
  Harness h;
  auto in = make(Opcode::kTensorCopy, Engine::kVector,
                 {sbuf(num::fp32(), 96, 40, 0, {8}), sbuf(num::fp32(), 0, 40, 0, {8})});
  in.name = "copy_tail";
  in.source_line = 17;
  EXPECT_FALSE(h.run(in));
  ASSERT_EQ(h.faults().size(), 1u);
  const mem::Fault& f = h.faults()[0];
  EXPECT_EQ(f.kind, mem::FaultKind::kPartitionRange);
  EXPECT_EQ(f.p_begin, 96);
  EXPECT_EQ(f.p_end, 136);
  const std::string s = f.to_string();
  EXPECT_NE(s.find("#0 tensor_copy on dve 'copy_tail' (line 17)"), std::string::npos) << s;
  EXPECT_NE(s.find("sbuf partitions [96,136)"), std::string::npos) << s;
  EXPECT_NE(s.find("operand 0"), std::string::npos) << s;
}

TEST(Faults, PastTheEndOfSbufPsumAndHbm) {
  Harness h;  // NC-v3: 224 KiB per partition, PSUM 16 KiB
  const auto src = sbuf(num::fp32(), 0, 1, 0, {8});
  EXPECT_FALSE(h.run(make(Opcode::kTensorCopy, Engine::kVector,
                          {sbuf(num::fp32(), 0, 1, 224 * 1024 - 16, {8}), src})));
  EXPECT_FALSE(h.run(make(Opcode::kTensorCopy, Engine::kVector,
                          {psum(num::fp32(), 0, 1, 16 * 1024 - 4, {2}), src})));
  EXPECT_FALSE(h.run(
      make(Opcode::kDmaCopy, Engine::kSync,
           {sbuf(num::fp32(), 0, 1, 0, {8}), hbm(num::fp32(), (int64_t{1} << 34) - 8, 1, 8)})));
  ASSERT_EQ(h.faults().size(), 3u);
  for (const auto& f : h.faults()) EXPECT_EQ(f.kind, mem::FaultKind::kOutOfBounds) << f.to_string();
  EXPECT_EQ(h.faults()[0].end, 224 * 1024 + 16);
  EXPECT_EQ(*h.faults()[1].space, isa::Space::kPsum);
  EXPECT_EQ(*h.faults()[2].space, isa::Space::kHbm);
}

TEST(Faults, GpSimdOnPsumAndOtherSpaceRules) {
  Harness h;
  const auto ps = psum(num::fp32(), 0, 32, 0, {8});
  const auto sb = sbuf(num::fp32(), 0, 32, 0, {8});
  EXPECT_FALSE(h.run(make(Opcode::kTensorCopy, Engine::kGpSimd, {sb, ps})));
  EXPECT_FALSE(h.run(make(Opcode::kMemset, Engine::kGpSimd, {ps})));
  EXPECT_FALSE(h.run(make(Opcode::kTensorCopy, Engine::kVector, {sb, hbm(num::fp32(), 0, 32, 8)})));
  EXPECT_FALSE(h.run(make(Opcode::kLoadStationary, Engine::kTensor, {ps})));
  ASSERT_EQ(h.faults().size(), 4u);
  for (const auto& f : h.faults()) EXPECT_EQ(f.kind, mem::FaultKind::kEngineSpace);
  EXPECT_NE(h.faults()[0].to_string().find("tensor_copy on pool"), std::string::npos);
  EXPECT_NE(h.faults()[0].to_string().find("no psum access"), std::string::npos);
}

TEST(Faults, StartPartitionRuleAndNothingWritten) {
  Harness h;
  const auto dst = sbuf(num::fp32(), 8, 8, 0, {4});
  isa::Params p;
  p.value = 1;
  EXPECT_FALSE(h.run(make(Opcode::kMemset, Engine::kVector, {dst}, p)));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kPartitionStart);
  for (double v : h.get(dst)) EXPECT_TRUE(std::isnan(v));  // still uninitialised
  ExecOptions o;
  o.enforce_start_partition = false;
  Harness lax(3, o);
  EXPECT_TRUE(lax.run(make(Opcode::kMemset, Engine::kVector, {dst}, p)));
}

TEST(Faults, UninitialisedReadGivesNaN) {
  Harness h;
  const auto src = sbuf(num::bf16(), 0, 4, 0, {8}), dst = sbuf(num::fp32(), 0, 4, 64, {8});
  isa::Params p;
  p.op0 = isa::AluOp::kAdd;
  p.arg0 = {1.0f, -1};
  ASSERT_TRUE(h.run(make(Opcode::kTensorScalar, Engine::kVector, {dst, src}, p)));
  for (double v : h.get(dst)) EXPECT_TRUE(std::isnan(v));
  const auto pd = psum(num::fp32(), 0, 4, 0, {8});
  ASSERT_TRUE(h.run(make(Opcode::kTensorCopy, Engine::kVector, {dst, pd})));
  for (double v : h.get(dst)) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace trnsim::core::testing
