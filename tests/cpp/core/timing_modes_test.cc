// The three run modes (ARCHITECTURE.md): functional + timing computes the same values as
// functional-only and the same times as timing-only; timing-only has no data.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "base/error.h"
#include "core/timing/timing_run.h"
#include "core/timing_test_util.h"

namespace trnsim::core {
namespace {

using namespace testing;
using isa::Engine;
using isa::Opcode;

// y = 2 x through SBUF: load (signal 0), VectorE multiply (wait 0, signal 1), store (wait 1).
isa::Program double_it() {
  isa::Program p;
  p.add_tensor("x", num::fp32(), {128, 256}, isa::TensorKind::kInput);
  p.add_tensor("y", num::fp32(), {128, 256}, isa::TensorKind::kOutput);
  p.append(with_signal(dma_copy(sbuf(128, 256, num::fp32()), p.rows("x", 0, 128)), 0));
  isa::Instruction mul = unary(Opcode::kTensorScalar, Engine::kVector,
                               sbuf(128, 256, num::fp32(), 4096), sbuf(128, 256, num::fp32()));
  mul.p.op0 = isa::AluOp::kMult;
  mul.p.arg0.imm = 2.0f;
  p.append(with_signal(with_wait(mul, 0, 1), 1));
  p.append(with_wait(dma_copy(p.rows("y", 0, 128), sbuf(128, 256, num::fp32(), 4096)), 1, 1));
  return p;
}

std::vector<float> input() {
  std::vector<float> x(128 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 1000) * 0.25f - 7.0f;
  return x;
}

TEST(TimingModes, FunctionalTimingMatchesBothOtherModes) {
  const isa::Program p = double_it();
  const std::vector<float> x = input();

  CoreRunner timed(chip("trn2"), p, RunMode::kFunctionalTiming);
  timed.functional().write_tensor_f32("x", x);
  const TimingResult rt = timed.run();
  ASSERT_TRUE(rt.ok()) << rt.faults.to_string();

  CoreRunner values(chip("trn2"), p, RunMode::kFunctionalOnly);
  values.functional().write_tensor_f32("x", x);
  const TimingResult rv = values.run();
  ASSERT_TRUE(rv.ok()) << rv.faults.to_string();
  EXPECT_EQ(rv.total, Picoseconds(0));
  EXPECT_EQ(rv.instructions, 3u);

  const std::vector<float> yt = timed.functional().read_tensor_f32("y");
  EXPECT_EQ(yt, values.functional().read_tensor_f32("y"));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(yt[i], 2.0f * x[i]) << i;

  CoreRunner shapes(chip("trn2"), p, RunMode::kTimingOnly);
  EXPECT_THROW(shapes.functional(), InputError);
  const TimingResult rs = shapes.run();
  EXPECT_EQ(rs.total, rt.total);
  // Equal but for the event count: timing alone needs no completion events for values, nor
  // for signals (core/timing/timing_semaphores.h).
  const auto without_events = [](std::string s) {
    return std::regex_replace(s, std::regex(", [0-9]+ events"), "");
  };
  EXPECT_EQ(without_events(rs.summary()), without_events(rt.summary()));
  EXPECT_LE(rs.events, rt.events);
}

// Two matmuls with different stationaries: the second LoadStationary finishes in the
// background before the first matmul completes, yet the first matmul must use the first
// stationary (in-order retirement of values).
isa::Program two_stationaries() {
  isa::Program p;
  p.add_tensor("w0", num::bf16(), {128, 128}, isa::TensorKind::kInput);
  p.add_tensor("w1", num::bf16(), {128, 128}, isa::TensorKind::kInput);
  p.add_tensor("x", num::bf16(), {128, 64}, isa::TensorKind::kInput);
  p.add_tensor("y0", num::fp32(), {128, 64}, isa::TensorKind::kOutput);
  p.add_tensor("y1", num::fp32(), {128, 64}, isa::TensorKind::kOutput);
  p.append(with_signal(dma_copy(sbuf(128, 128), p.rows("w0", 0, 128)), 0));
  p.append(with_signal(dma_copy(sbuf(128, 128, num::bf16(), 256), p.rows("w1", 0, 128)), 0));
  p.append(with_signal(dma_copy(sbuf(128, 64, num::bf16(), 512), p.rows("x", 0, 128)), 0));
  p.append(with_wait(load_stationary(sbuf(128, 128)), 0, 3));
  p.append(with_signal(matmul(psum(128, 64), sbuf(128, 64, num::bf16(), 512)), 1));
  p.append(load_stationary(sbuf(128, 128, num::bf16(), 256)));
  p.append(
      with_signal(matmul(psum(128, 64, num::fp32(), 2048), sbuf(128, 64, num::bf16(), 512)), 1));
  for (int i = 0; i < 2; ++i) {
    isa::Instruction copy =
        unary(Opcode::kActivation, Engine::kScalar, sbuf(128, 64, num::fp32(), 1024 + 256 * i),
              psum(128, 64, num::fp32(), 2048 * i));
    p.append(with_signal(with_wait(copy, 1, 2), 2));
  }
  p.append(with_wait(dma_copy(p.rows("y0", 0, 128), sbuf(128, 64, num::fp32(), 1024)), 2, 2));
  p.append(with_wait(dma_copy(p.rows("y1", 0, 128), sbuf(128, 64, num::fp32(), 1280)), 2, 2));
  return p;
}

TEST(TimingModes, BackgroundLoadStationaryDoesNotOvertakeTheMatmulBeforeIt) {
  const isa::Program p = two_stationaries();
  std::vector<float> w0(128 * 128), w1(128 * 128), x(128 * 64);
  for (size_t i = 0; i < w0.size(); ++i) {
    w0[i] = static_cast<float>(i % 7) - 3.0f;
    w1[i] = static_cast<float>(i % 5) + 1.0f;
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 3) - 1.0f;
  std::vector<std::vector<float>> got[2];
  int k = 0;
  for (RunMode mode : {RunMode::kFunctionalTiming, RunMode::kFunctionalOnly}) {
    CoreRunner r(chip("trn2"), p, mode);
    r.functional().write_tensor_f32("w0", w0);
    r.functional().write_tensor_f32("w1", w1);
    r.functional().write_tensor_f32("x", x);
    const TimingResult res = r.run();
    ASSERT_TRUE(res.ok()) << res.faults.to_string();
    got[k++] = {r.functional().read_tensor_f32("y0"), r.functional().read_tensor_f32("y1")};
  }
  EXPECT_EQ(got[0][0], got[1][0]);
  EXPECT_EQ(got[0][1], got[1][1]);
  EXPECT_NE(got[1][0], got[1][1]);  // the two stationaries differ, so would a mix-up
}

}  // namespace
}  // namespace trnsim::core
