// range_select against a reference written here from the NKI API reference: on_true where the
// free index + range_start satisfies both comparisons with the partition's bounds, else the
// fill; reduce_res the max, carried in the VectorE accumulator with accumulate (reduce_cmd
// reduce) as the reference's chaining example does.
#include <algorithm>
#include <limits>
#include <vector>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AluOp;
using isa::Engine;
using isa::Opcode;

constexpr double kFp32Min = -3.4028234663852886e38;

isa::Params params(AluOp op0, AluOp op1, int64_t start, bool accumulate) {
  isa::Params p;
  p.op0 = op0;
  p.op1 = op1;
  p.arg0 = {0, 3};  // bound0: the [P, 1] column in operand 3
  p.arg1 = {0, 4};  // bound1: operand 4
  p.iota_base = start;
  p.value = kFp32Min;
  p.reduce_op = AluOp::kMax;
  p.dma_accumulate = accumulate;
  return p;
}

struct Case {
  std::vector<double> x, lo, hi;
};

// The reference of one instruction: (dst, row max).
std::pair<std::vector<double>, std::vector<double>> reference(const Case& c, int64_t rows,
                                                              int64_t cols, int64_t start) {
  std::vector<double> out(c.x.size()), mx(static_cast<size_t>(rows), kFp32Min);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) {
      const auto k = static_cast<size_t>(r * cols + i);
      const double idx = static_cast<double>(start + i);
      const bool keep = idx >= c.lo[static_cast<size_t>(r)] && idx < c.hi[static_cast<size_t>(r)];
      out[k] = keep ? c.x[k] : kFp32Min;
      mx[static_cast<size_t>(r)] = std::max(mx[static_cast<size_t>(r)], out[k]);
    }
  return {out, mx};
}

TEST(RangeSelect, SelectsTheRangeAndReducesItsMax) {
  Harness h(3);
  Rng rng(11);
  const int64_t rows = 128, cols = 200;
  const auto x = sbuf(num::fp32(), 0, rows, 0, {cols});
  const auto dst = sbuf(num::fp32(), 0, rows, 1024, {cols});
  const auto red = sbuf(num::fp32(), 0, rows, 2048, {1});
  const auto lo = sbuf(num::fp32(), 0, rows, 2052, {1});
  const auto hi = sbuf(num::fp32(), 0, rows, 2056, {1});
  Case c{rng.values(num::fp32(), static_cast<size_t>(rows * cols), 50), {}, {}};
  for (int64_t r = 0; r < rows; ++r) {
    c.lo.push_back(static_cast<double>(r));
    c.hi.push_back(static_cast<double>(r + 40 + static_cast<int64_t>(rng.next() % 60)));
  }
  h.put(x, c.x);
  h.put(lo, c.lo);
  h.put(hi, c.hi);
  const int64_t start = 7;
  ASSERT_TRUE(h.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x, lo, hi},
                         params(AluOp::kIsGe, AluOp::kIsLt, start, false))))
      << h.faults().to_string();
  const auto [want, want_max] = reference(c, rows, cols, start);
  EXPECT_EQ(h.get(dst), want);
  EXPECT_EQ(h.get(red), want_max);
}

TEST(RangeSelect, AccumulateChainsTheMaxAcrossInstructions) {
  Harness h(4);
  const int64_t rows = 4, cols = 8;
  const auto x = sbuf(num::fp32(), 0, rows, 0, {cols});
  const auto dst = sbuf(num::fp32(), 0, rows, 64, {cols});
  const auto red = sbuf(num::fp32(), 0, rows, 128, {1});
  const auto lo = sbuf(num::fp32(), 0, rows, 132, {1});
  const auto hi = sbuf(num::fp32(), 0, rows, 136, {1});
  Case c{std::vector<double>(static_cast<size_t>(rows * cols)), {0, 0, 0, 0}, {10, 10, 10, 10}};
  for (size_t k = 0; k < c.x.size(); ++k) c.x[k] = static_cast<double>(k % 8);
  h.put(x, c.x);
  h.put(lo, c.lo);
  h.put(hi, c.hi);
  // First: indices 0..7 all in range, max 7. Second (start 8): indices 8, 9 only, max 1, but
  // the accumulator keeps 7. Third without accumulate: its own max, 1.
  ASSERT_TRUE(h.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x, lo, hi},
                         params(AluOp::kIsGe, AluOp::kIsLt, 0, false))));
  EXPECT_EQ(h.get(red), (std::vector<double>{7, 7, 7, 7}));
  ASSERT_TRUE(h.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x, lo, hi},
                         params(AluOp::kIsGe, AluOp::kIsLt, 8, true))));
  EXPECT_EQ(h.get(red), (std::vector<double>{7, 7, 7, 7}));
  EXPECT_EQ(h.get(dst)[1], 1);
  EXPECT_EQ(h.get(dst)[2], kFp32Min);
  ASSERT_TRUE(h.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x, lo, hi},
                         params(AluOp::kIsGe, AluOp::kIsLt, 8, false))));
  EXPECT_EQ(h.get(red), (std::vector<double>{1, 1, 1, 1}));
}

TEST(RangeSelect, ImmediateBoundsAndNotEqual) {
  Harness h(3);
  const auto x = sbuf(num::bf16(), 0, 2, 0, {6});
  const auto dst = sbuf(num::bf16(), 0, 2, 64, {6});
  const auto red = sbuf(num::fp32(), 0, 2, 128, {1});
  h.put(x, {1, 2, 3, 4, 5, 6, 6, 5, 4, 3, 2, 1});
  isa::Params p = params(AluOp::kNotEqual, AluOp::kIsLe, 0, false);
  p.arg0 = {2, -1};  // index != 2
  p.arg1 = {4, -1};  // index <= 4
  p.value = -1;
  ASSERT_TRUE(h.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x}, p)))
      << h.faults().to_string();
  EXPECT_EQ(h.get(dst), (std::vector<double>{1, 2, -1, 4, 5, -1, 6, 5, -1, 3, 2, -1}));
  EXPECT_EQ(h.get(red), (std::vector<double>{5, 6}));
}

TEST(RangeSelect, NeedsNcV3AndMaxAndComparisons) {
  const auto x = sbuf(num::fp32(), 0, 2, 0, {6});
  const auto dst = sbuf(num::fp32(), 0, 2, 64, {6});
  const auto red = sbuf(num::fp32(), 0, 2, 128, {1});
  isa::Params p = params(AluOp::kIsGe, AluOp::kIsLt, 0, false);
  p.arg0 = {0, -1};
  p.arg1 = {4, -1};
  Harness v2(2);
  EXPECT_FALSE(v2.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x}, p)));
  EXPECT_EQ(v2.faults()[0].kind, mem::FaultKind::kUnsupported);
  Harness h(3);
  isa::Params add = p;
  add.reduce_op = AluOp::kAdd;
  EXPECT_FALSE(h.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x}, add)));
  isa::Params mult = p;
  mult.op1 = AluOp::kMult;
  EXPECT_FALSE(h.run(make(Opcode::kRangeSelect, Engine::kVector, {dst, red, x}, mult)));
}

}  // namespace
}  // namespace trnsim::core::testing
