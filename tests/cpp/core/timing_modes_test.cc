// The three run modes (ARCHITECTURE.md): functional + timing computes the same values as
// functional-only and the same times as timing-only; timing-only has no data.
#include <gtest/gtest.h>

#include "base/error.h"
#include "core/timing_run.h"
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
  EXPECT_EQ(rs.summary(), rt.summary());
}

}  // namespace
}  // namespace trnsim::core
