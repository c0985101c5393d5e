// dma_copy: bit-exact same-dtype copies between HBM and SBUF with different shapes, casts
// through FP32, the read-add-write accumulate, and the DMA endpoint rules.
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

TEST(DmaCopy, SameDtypeMovesBytesAcrossShapes) {
  Harness h;
  Rng rng(50);
  const num::Format i32 = num::int_format(num::Dtype::kInt32);
  const auto src = hbm(i32, 1 << 20, 4, 96);   // 4 rows x 96
  const auto dst = sbuf(i32, 0, 8, 64, {48});  // 8 partitions x 48: same 384 elements
  std::vector<uint64_t> codes(384);
  for (auto& c : codes) c = rng.next() & 0xFFFFFFFFu;
  h.put_codes(src, codes);
  ASSERT_TRUE(h.run(make(Opcode::kDmaCopy, Engine::kSync, {dst, src}))) << h.faults().to_string();
  EXPECT_EQ(h.get_codes(dst), codes);
  // And back out to a different HBM place.
  const auto out = hbm(i32, 3 << 20, 2, 192);
  ASSERT_TRUE(h.run(make(Opcode::kDmaCopy, Engine::kScalar, {out, dst})));
  EXPECT_EQ(h.get_codes(out), codes);
}

// Integers of one width move their bits: uint32 0xFFFFFFFF is -1 as an int32, both ways, and
// int16 / uint16 alike; integers of different widths still convert by value.
TEST(DmaCopy, IntegersOfOneWidthKeepTheirBits) {
  for (const auto& [from, to] : {std::pair{num::Dtype::kUint32, num::Dtype::kInt32},
                                 std::pair{num::Dtype::kInt32, num::Dtype::kUint32},
                                 std::pair{num::Dtype::kInt16, num::Dtype::kUint16}}) {
    Harness h;
    const num::Format fs = num::int_format(from), fd = num::int_format(to);
    const uint64_t all_ones = fs.storage_bytes == 4 ? 0xFFFFFFFFu : 0xFFFFu;
    const auto src = hbm(fs, 0, 2, 4);
    const auto dst = sbuf(fd, 0, 2, 0, {4});
    const std::vector<uint64_t> codes{all_ones, 0, 1, 7, all_ones - 1, 2, 3, 0x80};
    h.put_codes(src, codes);
    ASSERT_TRUE(h.run(make(Opcode::kDmaCopy, Engine::kSync, {dst, src})));
    EXPECT_EQ(h.get_codes(dst), codes);
  }
  Harness h;  // uint32 to int16: by value, saturated (not the low bits)
  const auto src = hbm(num::int_format(num::Dtype::kUint32), 0, 1, 2);
  const auto dst = sbuf(num::int_format(num::Dtype::kInt16), 0, 1, 0, {2});
  h.put_codes(src, {70000, 5});
  ASSERT_TRUE(h.run(make(Opcode::kDmaCopy, Engine::kSync, {dst, src})));
  EXPECT_EQ(h.get_codes(dst), (std::vector<uint64_t>{0x7FFF, 5}));
}

TEST(DmaCopy, CastsThroughFp32WithTheInstructionRounding) {
  for (num::Format to : {num::bf16(), num::fp16(), num::fp8_e4m3(), num::fp8_e5m2()}) {
    Harness h;
    Rng rng(51);
    const auto src = hbm(num::fp32(), 0, 16, 64);
    const auto dst = sbuf(to, 0, 16, 0, {64});
    const auto v = rng.values(num::fp32(), 16 * 64, 3);
    h.put(src, v);
    ASSERT_TRUE(h.run(make(Opcode::kDmaCopy, Engine::kSync, {dst, src})));
    const auto out = h.get(dst);
    for (size_t i = 0; i < v.size(); ++i)
      ASSERT_TRUE(same(out[i], round_to(to, v[i]))) << to.name();
  }
  Harness h;
  EXPECT_FALSE(h.run(make(Opcode::kDmaCopy, Engine::kSync,
                          {sbuf(num::fp4_e2m1(), 0, 1, 0, {4}), hbm(num::fp32(), 0, 1, 4)})));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kDtype);
}

TEST(DmaCopy, AccumulateAddsInFp32) {
  for (num::Format f : {num::bf16(), num::fp32()}) {
    Harness h(4);
    Rng rng(52);
    const auto src = hbm(f, 4096, 32, 40);
    const auto dst = sbuf(f, 0, 32, 0, {40});
    const auto a = rng.values(f, 32 * 40, 10), b = rng.values(f, 32 * 40, 10);
    h.put(src, a);
    h.put(dst, b);
    isa::Params p;
    p.dma_accumulate = true;
    ASSERT_TRUE(h.run(make(Opcode::kDmaCopy, Engine::kSync, {dst, src}, p)));
    const auto out = h.get(dst);
    for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(same(out[i], fp32_then(f, a[i] + b[i])));
  }
  Harness h(4);
  isa::Params p;
  p.dma_accumulate = true;
  EXPECT_FALSE(h.run(make(Opcode::kDmaCopy, Engine::kSync,
                          {sbuf(num::fp16(), 0, 1, 0, {4}), hbm(num::fp16(), 0, 1, 4)}, p)));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kDtype);
  EXPECT_FALSE(h.run(make(Opcode::kDmaCopy, Engine::kSync,
                          {hbm(num::fp32(), 64, 1, 4), sbuf(num::fp32(), 0, 1, 0, {4})}, p)));
  EXPECT_EQ(h.faults()[1].kind, mem::FaultKind::kEngineSpace);
  // NC-v3 adds too (through the DMA CC engines: only its time differs, dma_plan.cc).
  Harness v3(3);
  v3.put(sbuf(num::fp32(), 0, 1, 0, {4}), {1, 2, 3, 4});
  v3.put(hbm(num::fp32(), 0, 1, 4), {10, 20, 30, 40});
  EXPECT_TRUE(v3.run(make(Opcode::kDmaCopy, Engine::kSync,
                          {sbuf(num::fp32(), 0, 1, 0, {4}), hbm(num::fp32(), 0, 1, 4)}, p)));
  EXPECT_EQ(v3.get(sbuf(num::fp32(), 0, 1, 0, {4})), (std::vector<double>{11, 22, 33, 44}));
}

TEST(DmaCopy, EndpointsAndCounts) {
  Harness h;
  // PSUM is not a DMA endpoint.
  EXPECT_FALSE(h.run(make(Opcode::kDmaCopy, Engine::kSync,
                          {psum(num::fp32(), 0, 1, 0, {4}), hbm(num::fp32(), 0, 1, 4)})));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kEngineSpace);
  // Element counts must match.
  EXPECT_FALSE(h.run(make(Opcode::kDmaCopy, Engine::kSync,
                          {sbuf(num::fp32(), 0, 1, 0, {5}), hbm(num::fp32(), 0, 1, 4)})));
  EXPECT_EQ(h.faults()[1].kind, mem::FaultKind::kShape);
  // A DMA may start at any partition (no quadrant rule).
  EXPECT_TRUE(h.run(make(Opcode::kDmaCopy, Engine::kSync,
                         {sbuf(num::fp32(), 5, 3, 0, {4}), hbm(num::fp32(), 0, 3, 4)})));
}

}  // namespace
}  // namespace trnsim::core::testing
