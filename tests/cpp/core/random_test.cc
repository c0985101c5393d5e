// rand_seed, rand and dropout: the engines' per-lane generators. Checked: values in [0, 1) on
// a 2^-24 grid, about uniform; one seed, one sequence (a seeded engine repeats itself, lanes
// and engines differ, draws go on between instructions); dropout's probability 0 and 1 and
// its rate in between.
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

const num::Format kI32 = num::int_format(num::Dtype::kInt32);

isa::Instruction seed_from(const isa::AccessPattern& seeds, Engine e = Engine::kGpSimd) {
  return make(Opcode::kRandSeed, e, {seeds});
}

TEST(Random, RandIsUniformOnTheUnitIntervalAndDifferentPerLane) {
  Harness h;
  const auto d = sbuf(num::fp32(), 0, 128, 0, {1024});
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {d})));
  const auto v = h.get(d);
  double sum = 0;
  std::vector<int> bins(10, 0);
  for (double x : v) {
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
    ASSERT_EQ(x * 16777216.0, std::floor(x * 16777216.0));  // on the 2^-24 grid
    sum += x;
    ++bins[static_cast<size_t>(x * 10)];
  }
  EXPECT_NEAR(sum / static_cast<double>(v.size()), 0.5, 0.005);
  for (int b : bins) EXPECT_NEAR(b, 128 * 1024 / 10, 600);
  std::set<double> first_of_lane;
  for (int r = 0; r < 128; ++r) first_of_lane.insert(v[static_cast<size_t>(r * 1024)]);
  EXPECT_EQ(first_of_lane.size(), 128u);
}

TEST(Random, TheSameSeedGivesTheSameSequence) {
  Harness h;
  const auto seed = sbuf(kI32, 0, 1, 0, {1});
  const auto a = sbuf(num::fp32(), 0, 128, 64, {16});
  const auto b = sbuf(num::fp32(), 0, 128, 128, {16});
  const auto c = sbuf(num::fp32(), 0, 128, 192, {16});
  h.put(seed, {42});
  ASSERT_TRUE(h.run(seed_from(seed)));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {a})));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {b})));  // the draws go on
  ASSERT_TRUE(h.run(seed_from(seed)));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {c})));
  EXPECT_EQ(h.get(a), h.get(c));
  EXPECT_NE(h.get(a), h.get(b));
  // Another seed, or another engine with the same seed, gives another sequence.
  h.put(seed, {43});
  ASSERT_TRUE(h.run(seed_from(seed)));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {c})));
  EXPECT_NE(h.get(a), h.get(c));
  h.put(seed, {42});
  ASSERT_TRUE(h.run(seed_from(seed, Engine::kVector)));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kVector, {c})));
  EXPECT_NE(h.get(a), h.get(c));
}

TEST(Random, PerLaneSeedsReseedOnlyTheirLanes) {
  Harness h;
  const auto seeds = sbuf(kI32, 0, 4, 0, {6});  // XORWOW's 6 words, one row per lane
  const auto before = sbuf(num::fp32(), 0, 8, 64, {4});
  const auto after = sbuf(num::fp32(), 0, 8, 128, {4});
  std::vector<double> words(24);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<double>(i % 6);  // equal rows
  h.put(seeds, words);
  ASSERT_TRUE(h.run(seed_from(seeds)));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {before})));
  ASSERT_TRUE(h.run(seed_from(seeds)));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {after})));
  const auto x = h.get(before), y = h.get(after);
  for (int r = 0; r < 8; ++r)
    for (int i = 0; i < 4; ++i) {
      const size_t k = static_cast<size_t>(r * 4 + i);
      if (r < 4)
        EXPECT_EQ(x[k], y[k]) << "lane " << r << " was reseeded: its sequence starts again";
      else
        EXPECT_NE(x[k], y[k]) << "lane " << r << " is not in the seed tile: it goes on";
    }
}

TEST(Random, DropoutKeepsOrZeroesByTheProbability) {
  Harness h;
  Rng rng(5);
  const auto x = sbuf(num::fp32(), 0, 128, 0, {512});
  const auto d = sbuf(num::fp32(), 0, 128, 4096, {512});
  const auto col = sbuf(num::fp32(), 0, 128, 8192, {1});
  std::vector<double> v(128 * 512);
  // Never 0 (a zero is a dropped element), and fp32 values, which come back unchanged.
  for (double& e : v) e = static_cast<float>(rng.uniform(1, 2));
  h.put(x, v);
  isa::Params p;
  for (double prob : {0.0, 1.0, 0.3}) {
    p.arg0.imm = static_cast<float>(prob);
    ASSERT_TRUE(h.run(make(Opcode::kDropout, Engine::kVector, {d, x}, p)));
    const auto out = h.get(d);
    size_t dropped = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == 0)
        ++dropped;
      else
        ASSERT_EQ(out[i], v[i]);
    }
    EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(out.size()), prob, 0.01);
  }
  // A probability per partition: even partitions drop everything, odd ones nothing.
  std::vector<double> probs(128);
  for (int r = 0; r < 128; ++r) probs[static_cast<size_t>(r)] = r % 2 == 0 ? 1.0 : 0.0;
  h.put(col, probs);
  isa::Instruction in = make(Opcode::kDropout, Engine::kVector, {d, x, col});
  in.p.arg0.operand = 2;
  ASSERT_TRUE(h.run(in));
  const auto out = h.get(d);
  for (int r = 0; r < 128; ++r)
    for (int i = 0; i < 512; ++i) {
      const size_t k = static_cast<size_t>(r * 512 + i);
      ASSERT_EQ(out[k], r % 2 == 0 ? 0.0 : v[k]);
    }
}

TEST(Random, RngWordsAreRandsBitsAndKeepTheLowBits) {
  // rand's value k of a lane is (word k >> 8) * 2^-24: the same generator, so rng's uint32 words
  // predict rand's values from the same state, and a uint16 dst keeps each word's low half.
  const auto u32 = num::int_format(num::Dtype::kUint32);
  const auto u16 = num::int_format(num::Dtype::kUint16);
  Harness a, b, c;
  const auto words = sbuf(u32, 0, 8, 0, {40});
  const auto halves = sbuf(u16, 0, 8, 0, {40});
  const auto values = sbuf(num::fp32(), 0, 8, 0, {40});
  ASSERT_TRUE(a.run(make(Opcode::kRng, Engine::kVector, {words})));
  ASSERT_TRUE(b.run(make(Opcode::kRng, Engine::kVector, {halves})));
  ASSERT_TRUE(c.run(make(Opcode::kRand, Engine::kVector, {values})));
  const auto w = a.get_codes(words), hlf = b.get_codes(halves);
  const auto v = c.get(values);
  std::set<uint64_t> distinct(w.begin(), w.end());
  EXPECT_GT(distinct.size(), w.size() - 2);
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(hlf[i], w[i] & 0xFFFF);
    ASSERT_EQ(v[i], static_cast<double>(w[i] >> 8) / 16777216.0);
  }
}

TEST(Random, Rand2DrawsInItsRangePerLane) {
  Harness h(4);
  const auto d = sbuf(num::fp32(), 0, 64, 0, {512});
  const auto lo = sbuf(num::fp32(), 0, 64, 4096, {1});
  std::vector<double> lows(64);
  for (int p = 0; p < 64; ++p) lows[static_cast<size_t>(p)] = -p;
  h.put(lo, lows);
  isa::Params prm;
  prm.arg0.operand = 1;
  prm.arg1.imm = 10.0f;
  ASSERT_TRUE(h.run(make(Opcode::kRand2, Engine::kVector, {d, lo}, prm)));
  const auto v = h.get(d);
  for (int p = 0; p < 64; ++p) {
    double sum = 0;
    for (int i = 0; i < 512; ++i) {
      const double x = v[static_cast<size_t>(p * 512 + i)];
      ASSERT_GE(x, -p);
      ASSERT_LE(x, 10.0);
      sum += x;
    }
    EXPECT_NEAR(sum / 512, (10.0 - p) / 2, (10.0 + p) * 0.08) << p;
  }
}

TEST(Random, SavedStateRestoresTheSequence) {
  // rand_get_state, draws, rand_seed of the saved words, the same draws again.
  const auto u32 = num::int_format(num::Dtype::kUint32);
  Harness h;
  const auto state = sbuf(u32, 0, 128, 0, {6});
  const auto first = sbuf(num::fp32(), 0, 128, 1024, {32});
  const auto again = sbuf(num::fp32(), 0, 128, 2048, {32});
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {first})));  // some draws first
  ASSERT_TRUE(h.run(make(Opcode::kRandState, Engine::kGpSimd, {state})));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {first})));
  ASSERT_TRUE(h.run(seed_from(state)));
  ASSERT_TRUE(h.run(make(Opcode::kRand, Engine::kGpSimd, {again})));
  EXPECT_EQ(h.get(first), h.get(again));
  const auto words = h.get_codes(state);
  EXPECT_EQ(words[2], 32u);  // 32 draws before the save
  EXPECT_EQ(words[5], 0u);
}

}  // namespace
}  // namespace trnsim::core::testing
