// Reductions and scans against an independent re-implementation of the documented order
// (sequential in pattern order, one FP32 rounding per step, written with encode() rounding in
// double), for each float dtype of the source.
#include <cmath>

#include "exec_test_util.h"

namespace trnsim::core::testing {
namespace {

using isa::AluOp;
using isa::Engine;
using isa::Opcode;

double f32(double v) { return round_to(num::fp32(), v); }

class ReduceTest : public ::testing::TestWithParam<num::Format> {};

TEST_P(ReduceTest, TensorReduceInnermostAxes) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(3);
  const auto src = sbuf(f, 0, 16, 0, {3, 4, 5});
  const auto v = rng.values(f, 16 * 60, 4);
  h.put(src, v);
  for (int axes : {1, 2, 0}) {
    const int64_t inner = axes == 1 ? 5 : axes == 2 ? 20 : 60;
    const auto dst = axes == 0 ? sbuf(num::fp32(), 0, 16, 4096, {1})
                               : sbuf(num::fp32(), 0, 16, 4096, {60 / inner});
    isa::Params p;
    p.reduce_op = AluOp::kAdd;
    p.reduce_axes = static_cast<int8_t>(axes);
    ASSERT_TRUE(h.run(make(Opcode::kTensorReduce, Engine::kVector, {dst, src}, p)))
        << h.faults().to_string();
    const auto out = h.get(dst);
    for (int r = 0; r < 16; ++r)
      for (int64_t o = 0; o < 60 / inner; ++o) {
        double acc = v[static_cast<size_t>(r * 60 + o * inner)];
        for (int64_t i = 1; i < inner; ++i)
          acc = f32(acc + v[static_cast<size_t>(r * 60 + o * inner + i)]);
        ASSERT_TRUE(same(out[static_cast<size_t>(r * (60 / inner) + o)], acc)) << axes;
      }
  }
  // max over everything
  const auto mx = sbuf(f, 0, 16, 8192, {1});
  isa::Params p;
  p.reduce_op = AluOp::kMax;
  ASSERT_TRUE(h.run(make(Opcode::kTensorReduce, Engine::kVector, {mx, src}, p)));
  const auto out = h.get(mx);
  for (int r = 0; r < 16; ++r) {
    double m = -INFINITY;
    for (int i = 0; i < 60; ++i) m = std::max(m, v[static_cast<size_t>(r * 60 + i)]);
    ASSERT_EQ(out[static_cast<size_t>(r)], m);
  }
}

TEST_P(ReduceTest, TensorTensorScan) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(4);
  const auto x = sbuf(f, 0, 8, 0, {33}), y = sbuf(f, 0, 8, 512, {33});
  const auto init = sbuf(num::fp32(), 0, 8, 1024, {1});
  const auto d = sbuf(num::fp32(), 0, 8, 2048, {33});
  const auto vx = rng.values(f, 8 * 33, 1), vy = rng.values(f, 8 * 33, 1);
  const auto vi = rng.values(num::fp32(), 8, 1);
  h.put(x, vx);
  h.put(y, vy);
  h.put(init, vi);
  isa::Params p;
  p.op0 = AluOp::kMult;  // decaying running sum: r = x * r + y
  p.op1 = AluOp::kAdd;
  p.arg0 = {0, 3};
  ASSERT_TRUE(h.run(make(Opcode::kTensorTensorScan, Engine::kVector, {d, x, y, init}, p)))
      << h.faults().to_string();
  const auto out = h.get(d);
  for (int r = 0; r < 8; ++r) {
    double prev = vi[static_cast<size_t>(r)];
    for (int i = 0; i < 33; ++i) {
      const size_t k = static_cast<size_t>(r * 33 + i);
      prev = f32(f32(vx[k] * prev) + vy[k]);
      ASSERT_TRUE(same(out[k], prev)) << r << "," << i;
    }
  }
}

TEST_P(ReduceTest, TensorScalarReduceAndPartitionReduce) {
  const num::Format f = GetParam();
  Harness h;
  Rng rng(6);
  const auto src = sbuf(f, 0, 32, 0, {24});
  const auto d = sbuf(f, 32, 32, 0, {24});
  const auto red = sbuf(num::fp32(), 32, 32, 1024, {1});
  const auto v = rng.values(f, 32 * 24, 2);
  h.put(src, v);
  isa::Params p;
  p.op0 = AluOp::kMult;
  p.arg0 = {-1.25f, -1};
  p.reduce_op = AluOp::kAdd;
  ASSERT_TRUE(h.run(make(Opcode::kTensorScalarReduce, Engine::kVector, {d, red, src}, p)))
      << h.faults().to_string();
  const auto out = h.get(d), rv = h.get(red);
  for (int r = 0; r < 32; ++r) {
    double acc = 0;
    for (int i = 0; i < 24; ++i) {
      const double y = f32(v[static_cast<size_t>(r * 24 + i)] * -1.25);
      ASSERT_TRUE(same(out[static_cast<size_t>(r * 24 + i)], round_to(f, y)));
      acc = i == 0 ? y : f32(acc + y);
    }
    ASSERT_TRUE(same(rv[static_cast<size_t>(r)], acc));
  }
  const auto pr = sbuf(num::fp32(), 0, 1, 2048, {24});
  isa::Params q;
  q.reduce_op = AluOp::kAdd;
  ASSERT_TRUE(h.run(make(Opcode::kPartitionReduce, Engine::kGpSimd, {pr, src}, q)))
      << h.faults().to_string();
  const auto pv = h.get(pr);
  for (int i = 0; i < 24; ++i) {
    double acc = v[static_cast<size_t>(i)];
    for (int r = 1; r < 32; ++r) acc = f32(acc + v[static_cast<size_t>(r * 24 + i)]);
    ASSERT_TRUE(same(pv[static_cast<size_t>(i)], acc));
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ReduceTest, ::testing::ValuesIn(float_formats()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace trnsim::core::testing
