// find_index8 and match_replace8 against a reference written here from the NKI API reference:
// the first unclaimed position of each value, repeated values claiming successive positions
// (find_index8 from vals[0], match_replace8 from vals[7]), all ones when nothing is left.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

constexpr uint64_t kNone32 = 0xFFFFFFFFu;

// Reference: for each value in `order`, the first position of data equal to it that no earlier
// value took; kNone32 when there is none.
std::vector<uint64_t> positions(const std::vector<double>& data, const std::vector<double>& vals,
                                bool backward) {
  std::vector<bool> taken(data.size(), false);
  std::vector<uint64_t> out(8, kNone32);
  for (int k = 0; k < 8; ++k) {
    const int j = backward ? 7 - k : k;
    for (size_t i = 0; i < data.size(); ++i)
      if (!taken[i] && data[i] == vals[static_cast<size_t>(j)]) {
        taken[i] = true;
        out[static_cast<size_t>(j)] = i;
        break;
      }
  }
  return out;
}

TEST(Match8, FindIndex8OfTopValuesMatchesTheReference) {
  for (const num::Format f : {num::bf16(), num::fp32(), num::fp16()}) {
    Harness h;
    Rng rng(7);
    const int64_t n = 300;
    const auto data = sbuf(f, 0, 128, 0, {n});
    const auto vals = sbuf(f, 0, 128, 2048, {8});
    const auto dst = sbuf(num::int_format(num::Dtype::kUint32), 0, 128, 4096, {8});
    // Values from a small set, so that rows repeat values and vals repeat too.
    std::vector<double> x(static_cast<size_t>(128 * n)), v(128 * 8);
    for (double& e : x) e = static_cast<double>(rng.next() % 40) - 20;
    for (int r = 0; r < 128; ++r)
      for (int j = 0; j < 8; ++j)
        v[static_cast<size_t>(r * 8 + j)] = static_cast<double>(rng.next() % 48) - 24;
    h.put(data, x);
    h.put(vals, v);
    ASSERT_TRUE(h.run(make(Opcode::kFindIndex8, Engine::kVector, {dst, data, vals})));
    const auto got = h.get_codes(dst);
    for (int r = 0; r < 128; ++r) {
      const std::vector<double> row(x.begin() + r * n, x.begin() + (r + 1) * n);
      const std::vector<double> want_of(v.begin() + r * 8, v.begin() + (r + 1) * 8);
      const auto want = positions(row, want_of, false);
      for (int j = 0; j < 8; ++j)
        ASSERT_EQ(got[static_cast<size_t>(r * 8 + j)], want[static_cast<size_t>(j)])
            << f.name() << " row " << r << " value " << j;
    }
  }
}

// The NKI reference's own example: data [1, 2, 3, 4, 8 x 7], vals [3, 8 x 7].
TEST(Match8, RepeatedValuesClaimPositionsInOppositeOrders) {
  Harness h;
  const auto data = sbuf(num::fp32(), 0, 1, 0, {11});
  const auto vals = sbuf(num::fp32(), 0, 1, 256, {8});
  const auto idx = sbuf(num::int_format(num::Dtype::kUint32), 0, 1, 512, {8});
  const auto out = sbuf(num::fp32(), 0, 1, 768, {11});
  h.put(data, {1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8});
  h.put(vals, {3, 8, 8, 8, 8, 8, 8, 8});
  ASSERT_TRUE(h.run(make(Opcode::kFindIndex8, Engine::kVector, {idx, data, vals})));
  EXPECT_EQ(h.get_codes(idx), (std::vector<uint64_t>{2, 4, 5, 6, 7, 8, 9, 10}));
  isa::Params p;
  p.value = -1;
  ASSERT_TRUE(h.run(make(Opcode::kMatchReplace8, Engine::kVector, {out, idx, data, vals}, p)));
  EXPECT_EQ(h.get_codes(idx), (std::vector<uint64_t>{2, 10, 9, 8, 7, 6, 5, 4}));
  EXPECT_EQ(h.get(out), (std::vector<double>{1, 2, -1, 4, -1, -1, -1, -1, -1, -1, -1}));
}

TEST(Match8, MatchReplace8InPlaceAfterMax8IsTheNextTop8) {
  // A top-16 in two rounds, as NKI kernels write it: max8, replace the 8 found by -inf in place,
  // max8 again gives the next 8.
  Harness h;
  Rng rng(3);
  const int64_t n = 1000;
  const auto data = sbuf(num::fp32(), 0, 128, 0, {n});
  const auto top = sbuf(num::fp32(), 0, 128, 4096, {8});
  const auto idx = sbuf(num::int_format(num::Dtype::kUint16), 0, 128, 4128, {8});
  const auto x = rng.values(num::fp32(), 128 * n, 100);
  h.put(data, x);
  ASSERT_TRUE(h.run(make(Opcode::kMax8, Engine::kVector, {top, data})));
  const auto first = h.get(top);
  isa::Params p;
  p.value = -std::numeric_limits<double>::infinity();
  ASSERT_TRUE(h.run(make(Opcode::kMatchReplace8, Engine::kVector, {data, idx, data, top}, p)));
  const auto where = h.get_codes(idx);
  ASSERT_TRUE(h.run(make(Opcode::kMax8, Engine::kVector, {top, data})));
  const auto second = h.get(top);
  for (int r = 0; r < 128; ++r) {
    std::vector<double> row(x.begin() + r * n, x.begin() + (r + 1) * n);
    std::vector<double> sorted = row;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    for (int j = 0; j < 8; ++j) {
      const size_t k = static_cast<size_t>(r * 8 + j);
      ASSERT_EQ(first[k], sorted[static_cast<size_t>(j)]);
      ASSERT_EQ(second[k], sorted[static_cast<size_t>(8 + j)]);
      ASSERT_EQ(row[where[k]], first[k]);  // uint16 positions of the replaced values
    }
  }
}

TEST(Match8, AMissingValueIsAllOnesAndReplacesNothing) {
  Harness h;
  const auto data = sbuf(num::bf16(), 0, 2, 0, {8});
  const auto vals = sbuf(num::bf16(), 0, 2, 64, {8});
  const auto idx32 = sbuf(num::int_format(num::Dtype::kUint32), 0, 2, 128, {8});
  const auto idx16 = sbuf(num::int_format(num::Dtype::kUint16), 0, 2, 192, {8});
  const auto out = sbuf(num::bf16(), 0, 2, 256, {8});
  const std::vector<double> x{5, 6, 7, 8, 1, 2, 3, 4, 0, -0.0, 1, 1, 2, 2, 3, 3};
  h.put(data, x);
  // Row 0: 9 is absent; row 1: NaN matches nothing, -0 equals +0, 1 appears twice.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  h.put(vals, {9, 5, 6, 7, 8, 1, 2, 3, nan, 0, 1, 1, 1, 2, 3, -0.0});
  ASSERT_TRUE(h.run(make(Opcode::kFindIndex8, Engine::kVector, {idx32, data, vals})));
  EXPECT_EQ(h.get_codes(idx32), (std::vector<uint64_t>{kNone32, 0, 1, 2, 3, 4, 5, 6,  //
                                                       kNone32, 0, 2, 3, kNone32, 4, 6, 1}));
  isa::Params p;
  p.value = 100;
  ASSERT_TRUE(h.run(make(Opcode::kMatchReplace8, Engine::kVector, {out, idx16, data, vals}, p)));
  // Backward: row 1 takes -0 (slot 7) first, at position 0; slot 1's 0 then finds position 1.
  EXPECT_EQ(h.get_codes(idx16), (std::vector<uint64_t>{0xFFFF, 0, 1, 2, 3, 4, 5, 6,  //
                                                       0xFFFF, 1, 0xFFFF, 3, 2, 4, 6, 0}));
  EXPECT_EQ(h.get(out), (std::vector<double>{100, 100, 100, 100, 100, 100, 100, 4,  //
                                             100, 100, 100, 100, 100, 2, 100, 3}));
}

TEST(Match8, SizesOutsideTheLimitsAreFaults) {
  Harness h;
  const auto few = sbuf(num::fp32(), 0, 1, 0, {7});
  const auto vals = sbuf(num::fp32(), 0, 1, 64, {8});
  const auto idx = sbuf(num::int_format(num::Dtype::kUint32), 0, 1, 128, {8});
  EXPECT_FALSE(h.run(make(Opcode::kFindIndex8, Engine::kVector, {idx, few, vals})));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kShape);
  const auto seven_vals = sbuf(num::fp32(), 0, 1, 64, {7});
  const auto data = sbuf(num::fp32(), 0, 1, 0, {16});
  EXPECT_FALSE(h.run(make(Opcode::kFindIndex8, Engine::kVector, {idx, data, seven_vals})));
  const auto big = sbuf(num::bf16(), 0, 1, 0, {16385});
  const auto out = sbuf(num::bf16(), 0, 1, 40000, {16385});
  EXPECT_FALSE(h.run(make(Opcode::kMatchReplace8, Engine::kVector, {out, idx, big, vals})));
}

}  // namespace
}  // namespace trnsim::core::testing
