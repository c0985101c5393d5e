// Placement by live range (kernel/placement.h): live ranges, reuse, no overlap of tiles live at
// once, spills; and the builder's use of it (build(): final addresses, WAR waits on reuse,
// spill DMAs that keep the results).
#include "kernel/placement.h"

#include <gtest/gtest.h>

#include <map>

#include "base/error.h"
#include "core/race/race_check.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::PlaceMemory;
using kernel::PlaceTile;
using kernel::PlaceUse;

const PlaceMemory kSbuf{"SBUF", 1024, 64, 0, true};

// For every pair of tiles live at one instruction, their ranges must be disjoint.
void expect_no_overlap(const std::vector<PlaceTile>& tiles, const std::vector<PlaceUse>& uses,
                       const kernel::Placement& p) {
  // A tile is live from a use to its next use when it stays resident; approximate with the
  // uses themselves: tiles used by one instruction are live together.
  std::map<int64_t, std::vector<size_t>> by_instr;
  for (size_t u = 0; u < uses.size(); ++u) by_instr[uses[u].instr].push_back(u);
  for (const auto& [k, us] : by_instr)
    for (size_t i : us)
      for (size_t j : us) {
        if (uses[i].tile == uses[j].tile) continue;
        const int64_t a0 = p.use_base[i], a1 = a0 + tiles[static_cast<size_t>(uses[i].tile)].bytes;
        const int64_t b0 = p.use_base[j], b1 = b0 + tiles[static_cast<size_t>(uses[j].tile)].bytes;
        EXPECT_TRUE(a1 <= b0 || b1 <= a0) << "instruction " << k;
      }
}

TEST(Placement, LiveRangesShareBytes) {
  // Four tiles of 512 B in 1024 B: a and b live together, c and d after both died.
  const std::vector<PlaceTile> tiles{{"a", 512}, {"b", 512}, {"c", 512}, {"d", 512}};
  const std::vector<PlaceUse> uses{
      {0, 0, true, true}, {1, 1, true, true}, {2, 0, false}, {2, 1, false},
      {3, 2, true, true}, {4, 3, true, true}, {5, 2, false}, {5, 3, false},
  };
  const kernel::Placement p = kernel::place_tiles(kSbuf, tiles, uses);
  EXPECT_TRUE(p.spills.empty());
  EXPECT_EQ(p.high_water, 1024);
  expect_no_overlap(tiles, uses, p);
}

TEST(Placement, ALoopCarriedNameHoldsOneGeneration) {
  // x = load(); acc += x, for 8 iterations: x of 512 B and acc of 512 B fit 1024 B only
  // if the previous x has given its bytes back, which it does at its last use.
  std::vector<PlaceTile> tiles{{"acc", 512}};
  std::vector<PlaceUse> uses{{0, 0, true, true}};
  int64_t k = 1;
  for (int i = 0; i < 8; ++i) {
    tiles.push_back({"x" + std::to_string(i), 512});
    const int32_t x = static_cast<int32_t>(tiles.size() - 1);
    uses.push_back({k++, x, true, true});
    uses.push_back({k, 0, true, false});
    uses.push_back({k, x, false});
    uses.push_back({k++, 0, false});
  }
  const kernel::Placement p = kernel::place_tiles(kSbuf, tiles, uses);
  EXPECT_TRUE(p.spills.empty());
  expect_no_overlap(tiles, uses, p);
  // The accumulator keeps its place throughout.
  for (size_t u = 0; u < uses.size(); ++u)
    if (uses[u].tile == 0) EXPECT_EQ(p.use_base[u], p.use_base[0]);
}

TEST(Placement, AWholeOverwriteStartsANewLiveRange) {
  // t written, read, written whole again, read: between its read and the overwrite it holds
  // nothing, so u (live only there) fits beside the other tile.
  const std::vector<PlaceTile> tiles{{"t", 512}, {"u", 512}, {"v", 512}};
  const std::vector<PlaceUse> uses{
      {0, 0, true, true}, {1, 0, false}, {1, 2, true, true},   // t read into v
      {2, 1, true, true}, {3, 1, false}, {3, 2, true, false},  // u lives here
      {4, 0, true, true}, {5, 0, false}, {5, 2, false},
  };
  const kernel::Placement p = kernel::place_tiles(kSbuf, tiles, uses);
  EXPECT_TRUE(p.spills.empty());
  expect_no_overlap(tiles, uses, p);
}

TEST(Placement, SpillsTheTileUsedFurthestAheadAndReloadsIt) {
  // a, b, c each 512 B, 1024 B of SBUF: a is written, b and c are made from nothing and
  // combined, then a is read. a must go to HBM and come back.
  const std::vector<PlaceTile> tiles{{"a", 512}, {"b", 512}, {"c", 512}};
  const std::vector<PlaceUse> uses{
      {0, 0, true, true}, {1, 1, true, true}, {2, 2, true, true},
      {3, 1, false},      {3, 2, false},      {4, 0, false},
  };
  const kernel::Placement p = kernel::place_tiles(kSbuf, tiles, uses);
  ASSERT_EQ(p.spills.size(), 2u);
  EXPECT_TRUE(p.spills[0].store);
  EXPECT_EQ(p.spills[0].tile, 0);
  EXPECT_EQ(p.spills[0].at, 0);  // right after its last write
  EXPECT_FALSE(p.spills[1].store);
  EXPECT_EQ(p.spills[1].tile, 0);
  EXPECT_EQ(p.spills[1].at, 4);  // before its next use
  EXPECT_EQ(p.spilled_tiles, 1);
  expect_no_overlap(tiles, uses, p);
}

TEST(Placement, NothingFitsIsAnErrorNamingTheTiles) {
  const std::vector<PlaceTile> tiles{{"big", 768}, {"other", 512}};
  const std::vector<PlaceUse> uses{{0, 0, true, true}, {0, 1, false}};
  try {
    (void)kernel::place_tiles(kSbuf, tiles, uses);
    FAIL();
  } catch (const InputError& e) {
    const std::string m = e.what();
    for (const char* w : {"'big' 768 B", "'other' 512 B", "1280", "1024"})
      EXPECT_NE(m.find(w), std::string::npos) << m;
  }
  // PSUM does not spill.
  const PlaceMemory psum{"PSUM", 1024, 8, 512, false};
  const std::vector<PlaceTile> banks{{"p0", 512}, {"p1", 512}, {"p2", 512}};
  const std::vector<PlaceUse> busy{{0, 0, true, true}, {1, 1, true, true}, {2, 2, true, true},
                                   {3, 0, false},      {3, 1, false},      {3, 2, false}};
  EXPECT_THROW((void)kernel::place_tiles(psum, banks, busy), InputError);
}

// The builder: a kernel whose live set exceeds SBUF runs with spills, gives the values it gives
// without them, and is race-free.
TEST(Placement, BuilderSpillsAndKeepsTheValues) {
  const arch::ChipSpec c = chip("trn1");
  const int64_t usable = c.core.sbuf.usable_bytes_per_partition;
  const int64_t f = usable / 4 / 3 - 64;  // three tiles fit, four do not
  kernel::KernelBuilder kb(c);
  auto x = kb.input("x", num::fp32(), {128, f});
  auto y = kb.output("y", num::fp32(), {128, f});
  std::vector<kernel::Tile> t;
  for (int i = 0; i < 4; ++i) {
    t.push_back(kb.sbuf("t" + std::to_string(i), num::fp32(), {128, f}));
    kb.dma_copy(t.back(), x);
    kb.tensor_scalar(t.back(), t.back(), {isa::AluOp::kMult, static_cast<float>(i + 1)});
  }
  // y = t0 + t1 + t2 + t3 = 10 x: every t is live until here.
  kb.tensor_tensor(t[0], t[0], t[1], isa::AluOp::kAdd);
  kb.tensor_tensor(t[0], t[0], t[2], isa::AluOp::kAdd);
  kb.tensor_tensor(t[0], t[0], t[3], isa::AluOp::kAdd);
  kb.dma_copy(y, t[0]);
  const isa::Program p = kb.build();
  EXPECT_GE(p.spill.stores, 1);
  EXPECT_GE(p.spill.reloads, 1);
  EXPECT_EQ(p.spill.bytes_spilled, p.spill.stores * f * 4 * 128);
  EXPECT_TRUE(core::check_races(p, c).clean());
  std::vector<float> in(static_cast<size_t>(128 * f));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 97) * 0.25f;
  const std::vector<float> out = run(c, p, {{"x", in}}).at("y");
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i], in[i] * 10.0f) << i;
}

}  // namespace
}  // namespace trnsim::kernel_test

namespace trnsim::kernel {
namespace {

TEST(PlacementInPlace, AnElementWiseResultTakesItsDyingSourcesBytes) {
  // x -> f(x) -> g(f(x)): each result goes over its input, which dies there, so the chain
  // holds one tile; a source read again later keeps its bytes.
  const PlaceMemory mem{"SBUF", 4096, 64, 0, true};
  const std::vector<PlaceTile> tiles{{"x", 1024}, {"fx", 1024}, {"gfx", 1024}, {"y", 1024}};
  std::vector<PlaceUse> uses{
      {0, 0, true, true},                           // x = load
      {1, 1, true, true, 0}, {1, 0, false, false},  // fx = f(x), x dies
      {2, 2, true, true, 1}, {2, 1, false, false},  // gfx = g(fx), fx dies
      {3, 3, true, true, 2}, {3, 2, false, false},  // y = h(gfx) ...
      {4, 2, false, false},                         // ... but gfx is read again
  };
  const Placement p = place_tiles(mem, tiles, uses);
  EXPECT_EQ(p.use_base[1], p.use_base[0]);  // fx over x
  EXPECT_EQ(p.use_base[3], p.use_base[1]);  // gfx over fx
  EXPECT_NE(p.use_base[5], p.use_base[3]);  // y: gfx lives on
  EXPECT_EQ(p.use_base[7], p.use_base[3]);
  EXPECT_LE(p.high_water, 2048);
}

}  // namespace
}  // namespace trnsim::kernel
