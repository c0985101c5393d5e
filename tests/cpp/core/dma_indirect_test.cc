// dma_gather / dma_scatter semantics: rows picked by int32 / uint32 offsets read at run time,
// bit-exact moves and casts, a table of some columns of a wider tensor, repeated rows in a
// scatter, and a row number outside the table as an index_range fault that writes nothing.
#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

const num::Format kI32 = num::int_format(num::Dtype::kInt32);
const num::Format kU32 = num::int_format(num::Dtype::kUint32);

constexpr int64_t kTable = 1 << 20;  // the table's HBM address
constexpr int64_t kOffsets = 8192;   // the offsets' byte in each SBUF partition

// Row r of a [rows, cols] table holds r * 100 + c.
std::vector<double> table_values(int rows, int64_t cols) {
  std::vector<double> v;
  for (int r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) v.push_back(r * 100.0 + static_cast<double>(c));
  return v;
}

TEST(DmaGather, PicksOneRowPerPartitionWithEitherOffsetType) {
  for (num::Format idx : {kI32, kU32}) {
    Harness h;
    const auto table = hbm(num::fp32(), kTable, 40, 16);
    const auto dst = sbuf(num::fp32(), 0, 5, 0, {16});
    const auto off = sbuf(idx, 0, 5, kOffsets, {1});
    h.put(table, table_values(40, 16));
    const std::vector<int> rows{39, 0, 7, 7, 12};  // a repeated row is read twice
    h.put(off, {39, 0, 7, 7, 12});
    ASSERT_TRUE(h.run(make(Opcode::kDmaGather, Engine::kGpSimd, {dst, table, off})))
        << h.faults().to_string();
    const auto got = h.get(dst);
    for (int p = 0; p < 5; ++p)
      for (int c = 0; c < 16; ++c) ASSERT_EQ(got[p * 16 + c], rows[p] * 100.0 + c) << idx.name();
  }
}

TEST(DmaGather, ColumnsOfAWiderTensorAndACast) {
  Harness h;
  // Columns 4..7 of a [10, 16] fp32 tensor: rows 16 elements apart, 4 elements each.
  isa::AccessPattern table = hbm(num::fp32(), kTable + 4 * 4, 10, 4);
  table.partition_stride = 16;
  const auto whole = hbm(num::fp32(), kTable, 10, 16);
  h.put(whole, table_values(10, 16));
  const auto dst = sbuf(num::bf16(), 0, 3, 0, {4});
  const auto off = sbuf(kI32, 0, 3, kOffsets, {1});
  h.put(off, {9, 2, 5});
  ASSERT_TRUE(h.run(make(Opcode::kDmaGather, Engine::kGpSimd, {dst, table, off})))
      << h.faults().to_string();
  const auto got = h.get(dst);
  const int rows[] = {9, 2, 5};
  for (int p = 0; p < 3; ++p)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(got[static_cast<size_t>(p * 4 + c)],
                round_to(num::bf16(), rows[p] * 100.0 + 4 + c));
}

TEST(DmaScatter, WritesRowsAndARepeatedRowKeepsTheLastPartition) {
  Harness h;
  const auto table = hbm(num::fp32(), kTable, 8, 4);
  h.put(table, std::vector<double>(32, -1.0));
  const auto src = sbuf(num::fp32(), 0, 4, 0, {4});
  std::vector<double> data;
  for (int p = 0; p < 4; ++p)
    for (int c = 0; c < 4; ++c) data.push_back(p * 10.0 + c);
  h.put(src, data);
  const auto off = sbuf(kU32, 0, 4, kOffsets, {1});
  h.put(off, {6, 1, 6, 3});
  ASSERT_TRUE(h.run(make(Opcode::kDmaScatter, Engine::kGpSimd, {table, src, off})))
      << h.faults().to_string();
  const auto got = h.get(table);
  const int from[8] = {-1, 1, -1, 3, -1, -1, 2, -1};  // row 6: partition 2, the later one
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(got[static_cast<size_t>(r * 4 + c)], from[r] < 0 ? -1.0 : from[r] * 10.0 + c)
          << "row " << r;
}

TEST(DmaScatter, CastsThroughFp32) {
  Harness h;
  const auto table = hbm(num::bf16(), kTable, 4, 2);
  h.put(table, std::vector<double>(8, 0.0));
  const auto src = sbuf(num::fp32(), 0, 2, 0, {2});
  h.put(src, {1.0 + 1.0 / 1024, 3.0, -2.0, 0.5});
  const auto off = sbuf(kI32, 0, 2, kOffsets, {1});
  h.put(off, {3, 0});
  ASSERT_TRUE(h.run(make(Opcode::kDmaScatter, Engine::kGpSimd, {table, src, off})));
  const auto got = h.get(table);
  EXPECT_EQ(got[6], round_to(num::bf16(), 1.0 + 1.0 / 1024));
  EXPECT_EQ(got[7], 3.0);
  EXPECT_EQ(got[0], -2.0);
  EXPECT_EQ(got[1], 0.5);
}

TEST(DmaScatter, AccumulateAddsEveryPartitionIntoItsRow) {
  // NKI atomic_rmw: row offsets[p] += src[p], in fp32, partition after partition, so a
  // repeated row gets every partition's addend (bf16 rounds after each add).
  for (const num::Format f : {num::fp32(), num::bf16()}) {
    Harness h;
    const auto table = hbm(f, kTable, 6, 3);
    h.put(table, table_values(6, 3));
    const std::vector<double> start = h.get(table);  // as stored (bf16 rounds 301 to 300)
    const auto src = sbuf(f, 0, 4, 0, {3});
    const std::vector<double> add{0.5, 1, 2, 256, 0.25, -3, 1.5, 7, 0.125, 1, 1, 1};
    h.put(src, add);
    const auto off = sbuf(kI32, 0, 4, kOffsets, {1});
    h.put(off, {2, 5, 2, 0});
    isa::Params p;
    p.dma_accumulate = true;
    ASSERT_TRUE(h.run(make(Opcode::kDmaScatter, Engine::kGpSimd, {table, src, off}, p)))
        << h.faults().to_string();
    std::vector<double> want = start;
    const int rows[] = {2, 5, 2, 0};
    for (int q = 0; q < 4; ++q)
      for (int c = 0; c < 3; ++c) {
        double& w = want[static_cast<size_t>(rows[q] * 3 + c)];
        w = round_to(
            f, static_cast<float>(w) + static_cast<float>(add[static_cast<size_t>(q * 3 + c)]));
      }
    EXPECT_EQ(h.get(table), want) << f.name();
  }
}

TEST(DmaScatter, AccumulateCountsInt32ThroughFp32) {
  // A histogram's atomic_rmw: int32 counts added (through the DMA's fp32, exact here).
  Harness h;
  const auto table = hbm(kI32, kTable, 4, 1);
  h.put(table, {0, 10, 0, -4});
  const auto src = sbuf(kI32, 0, 5, 0, {1});
  h.put(src, {1, 1, 2, 1, 7});
  const auto off = sbuf(kI32, 0, 5, kOffsets, {1});
  h.put(off, {1, 3, 1, 1, 0});
  isa::Params p;
  p.dma_accumulate = true;
  ASSERT_TRUE(h.run(make(Opcode::kDmaScatter, Engine::kGpSimd, {table, src, off}, p)))
      << h.faults().to_string();
  EXPECT_EQ(h.get(table), (std::vector<double>{7, 14, 0, -3}));
}

TEST(DmaScatter, AccumulateTakesOneDtypeOnBothSides) {
  Harness h;
  const auto table = hbm(num::fp32(), kTable, 4, 2);
  const auto src = sbuf(num::bf16(), 0, 2, 0, {2});
  const auto off = sbuf(kI32, 0, 2, kOffsets, {1});
  h.put(off, {0, 1});
  isa::Params p;
  p.dma_accumulate = true;
  EXPECT_FALSE(h.run(make(Opcode::kDmaScatter, Engine::kGpSimd, {table, src, off}, p)));
  ASSERT_FALSE(h.faults().empty());
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kDtype);
}

TEST(DmaIndirect, ARowOutsideTheTableFaultsAndWritesNothing) {
  struct Case {
    num::Format idx;
    uint64_t code;  // the bad offset's bits
  };
  for (const Case& k : {Case{kI32, 8}, Case{kI32, 0xFFFFFFFFu}, Case{kU32, 0xFFFFFFFFu}}) {
    for (Opcode op : {Opcode::kDmaGather, Opcode::kDmaScatter}) {
      Harness h;
      const auto table = hbm(num::fp32(), kTable, 8, 4);
      const auto tile = sbuf(num::fp32(), 0, 3, 0, {4});
      const auto off = sbuf(k.idx, 0, 3, kOffsets, {1});
      h.put(table, std::vector<double>(32, 5.0));
      h.put(tile, std::vector<double>(12, 7.0));
      h.put_codes(off, {0, k.code, 1});
      const isa::Instruction in = op == Opcode::kDmaGather
                                      ? make(op, Engine::kGpSimd, {tile, table, off})
                                      : make(op, Engine::kGpSimd, {table, tile, off});
      EXPECT_FALSE(h.run(in));
      ASSERT_EQ(h.faults().size(), 1u);
      const mem::Fault& f = h.faults()[0];
      EXPECT_EQ(f.kind, mem::FaultKind::kIndexRange);
      EXPECT_NE(f.message.find("offsets[1] = "), std::string::npos) << f.message;
      EXPECT_NE(f.message.find("8 rows"), std::string::npos) << f.message;
      EXPECT_EQ(h.get(table), std::vector<double>(32, 5.0));  // row 0 was not written either
      EXPECT_EQ(h.get(tile), std::vector<double>(12, 7.0));
    }
  }
}

// skip_oob (NKI oob_mode.skip): a row outside the table moves nothing for its partition, in a
// gather (the partition keeps its values, same dtype or cast) and a scatter (no row written).
TEST(DmaIndirect, SkipOobMovesNothingForRowsOutside) {
  for (num::Format to : {num::fp32(), num::bf16()}) {
    Harness h;
    const auto table = hbm(num::fp32(), kTable, 6, 4);
    const auto dst = sbuf(to, 0, 4, 0, {4});
    const auto off = sbuf(kI32, 0, 4, kOffsets, {1});
    h.put(table, table_values(6, 4));
    h.put(dst, std::vector<double>(16, -1.0));
    h.put(off, {4, 6, 0, -3});
    isa::Instruction in = make(Opcode::kDmaGather, Engine::kGpSimd, {dst, table, off});
    in.p.dma_skip_oob = true;
    ASSERT_TRUE(h.run(in)) << h.faults().to_string();
    const auto got = h.get(dst);
    for (int c = 0; c < 4; ++c) {
      EXPECT_EQ(got[static_cast<size_t>(c)], round_to(to, 400.0 + c));
      EXPECT_EQ(got[static_cast<size_t>(4 + c)], -1.0);  // row 6: skipped
      EXPECT_EQ(got[static_cast<size_t>(8 + c)], 0.0 + c);
      EXPECT_EQ(got[static_cast<size_t>(12 + c)], -1.0);  // row -3: skipped
    }
  }
  Harness h;
  const auto table = hbm(num::fp32(), kTable, 6, 4);
  const auto src = sbuf(num::fp32(), 0, 2, 0, {4});
  const auto off = sbuf(kU32, 0, 2, kOffsets, {1});
  h.put(table, std::vector<double>(24, 0.0));
  h.put(src, std::vector<double>(8, 5.0));
  h.put(off, {9, 2});
  isa::Instruction in = make(Opcode::kDmaScatter, Engine::kGpSimd, {table, src, off});
  in.p.dma_skip_oob = true;
  ASSERT_TRUE(h.run(in)) << h.faults().to_string();
  const auto got = h.get(table);
  for (int64_t e = 0; e < 24; ++e) EXPECT_EQ(got[static_cast<size_t>(e)], e / 4 == 2 ? 5.0 : 0.0);
}

TEST(DmaIndirect, OffsetsMustBeOneIntegerPerPartition) {
  Harness h;
  const auto table = hbm(num::fp32(), kTable, 8, 4);
  const auto dst = sbuf(num::fp32(), 0, 4, 0, {4});
  EXPECT_FALSE(h.run(make(Opcode::kDmaGather, Engine::kGpSimd,
                          {dst, table, sbuf(num::fp32(), 0, 4, kOffsets, {1})})));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kDtype);
  Harness g;
  EXPECT_FALSE(g.run(
      make(Opcode::kDmaGather, Engine::kGpSimd, {dst, table, sbuf(kI32, 0, 2, kOffsets, {1})})));
  EXPECT_EQ(g.faults()[0].kind, mem::FaultKind::kShape);
}

}  // namespace
}  // namespace trnsim::core::testing
