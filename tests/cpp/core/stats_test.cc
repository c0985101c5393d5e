// bn_stats / bn_aggr against an independent re-implementation of the documented FP32 order
// (bit-exact) and against double-precision statistics (tolerance), and max8.
#include <algorithm>
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::Engine;
using isa::Opcode;

double f32(double v) { return round_to(num::fp32(), v); }

// count, mean, m2 of x[first], x[first + 2], ... in the documented FP32 order.
std::array<double, 3> stats(const std::vector<double>& x, size_t first) {
  double sum = 0, c = 0;
  for (size_t i = first; i < x.size(); i += 2) sum = f32(sum + x[i]), ++c;
  if (c == 0) return {0, 0, 0};
  const double mean = f32(sum / c);
  double m2 = 0;
  for (size_t i = first; i < x.size(); i += 2)
    m2 = f32(m2 + f32(f32(x[i] - mean) * f32(x[i] - mean)));
  return {c, mean, m2};
}

class StatsTest : public ::testing::TestWithParam<num::Format> {};

TEST_P(StatsTest, BnStatsThenBnAggr) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(8);
  const int64_t n = 301;  // odd: the even class has one more element
  const auto x0 = sbuf(f, 0, 64, 0, {n}), x1 = sbuf(f, 0, 64, 2048, {n});
  const auto st = sbuf(num::fp32(), 0, 64, 8192, {2, 6});
  const auto agg = sbuf(num::fp32(), 0, 64, 9000, {2});
  const auto v0 = rng.values(f, 64 * n, 3), v1 = rng.values(f, 64 * n, 3);
  h.put(x0, v0);
  h.put(x1, v1);
  auto st0 = st, st1 = st;
  st0.ndim = st1.ndim = 1;
  st0.dims[0] = st1.dims[0] = {1, 6};
  st1.offset += 24;
  ASSERT_TRUE(h.run(make(Opcode::kBnStats, Engine::kVector, {st0, x0}))) << h.faults().to_string();
  ASSERT_TRUE(h.run(make(Opcode::kBnStats, Engine::kVector, {st1, x1})));
  ASSERT_TRUE(h.run(make(Opcode::kBnAggr, Engine::kVector, {agg, st})));
  const auto sv = h.get(st), av = h.get(agg);
  for (int r = 0; r < 64; ++r) {
    std::vector<double> a(v0.begin() + r * n, v0.begin() + (r + 1) * n);
    std::vector<double> b(v1.begin() + r * n, v1.begin() + (r + 1) * n);
    std::vector<std::array<double, 3>> groups{stats(a, 0), stats(a, 1), stats(b, 0), stats(b, 1)};
    for (size_t g = 0; g < 4; ++g)
      for (size_t k = 0; k < 3; ++k)
        ASSERT_TRUE(same(sv[static_cast<size_t>(r * 12) + g * 3 + k], groups[g][k]))
            << r << " " << g;
    double cnt = 0, w = 0;
    for (auto& g : groups) cnt = f32(cnt + g[0]), w = f32(w + f32(g[0] * g[1]));
    const double mean = f32(w / cnt);
    double m2 = 0;
    for (auto& g : groups)
      m2 = f32(m2 + f32(g[2] + f32(g[0] * f32(f32(g[1] - mean) * f32(g[1] - mean)))));
    ASSERT_TRUE(same(av[static_cast<size_t>(r * 2)], mean));
    ASSERT_TRUE(same(av[static_cast<size_t>(r * 2 + 1)], f32(m2 / cnt)));
    // And close to the exact statistics of all 2n values.
    double s = 0, s2 = 0;
    for (double v : a) s += v;
    for (double v : b) s += v;
    const double mu = s / (2.0 * n);
    for (double v : a) s2 += (v - mu) * (v - mu);
    for (double v : b) s2 += (v - mu) * (v - mu);
    EXPECT_NEAR(av[static_cast<size_t>(r * 2)], mu, 1e-5);
    EXPECT_NEAR(av[static_cast<size_t>(r * 2 + 1)], s2 / (2.0 * n), 1e-4);
  }
}

TEST_P(StatsTest, Max8Descending) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(12);
  const auto x = sbuf(f, 0, 128, 0, {100});
  const auto d = sbuf(num::fp32(), 0, 128, 512, {8});
  const auto v = rng.values(f, 128 * 100, 50);
  h.put(x, v);
  ASSERT_TRUE(h.run(make(Opcode::kMax8, Engine::kVector, {d, x})));
  const auto out = h.get(d);
  for (int r = 0; r < 128; ++r) {
    std::vector<double> row(v.begin() + r * 100, v.begin() + (r + 1) * 100);
    std::sort(row.begin(), row.end(), [](double a, double b) {
      return a == b ? (!std::signbit(a) && std::signbit(b)) : a > b;
    });
    for (int i = 0; i < 8; ++i)
      ASSERT_TRUE(same(out[static_cast<size_t>(r * 8 + i)], row[static_cast<size_t>(i)]));
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, StatsTest, ::testing::ValuesIn(float_formats()),
                         [](const auto& info) { return info.param.name(); });

TEST(Stats, LimitsAreFaults) {
  Harness h;
  const auto big = sbuf(num::fp32(), 0, 1, 0, {513});
  const auto d = sbuf(num::fp32(), 0, 1, 4096, {6});
  EXPECT_FALSE(h.run(make(Opcode::kBnStats, Engine::kVector, {d, big})));
  EXPECT_EQ(h.faults()[0].kind, mem::FaultKind::kShape);
  const auto few = sbuf(num::fp32(), 0, 1, 0, {7});
  const auto d8 = sbuf(num::fp32(), 0, 1, 4096, {8});
  EXPECT_FALSE(h.run(make(Opcode::kMax8, Engine::kVector, {d8, few})));
}

}  // namespace
}  // namespace trnsim::core::testing
