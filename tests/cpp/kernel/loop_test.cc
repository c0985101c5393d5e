// Hardware loops and registers of the kernel API (builder_loop.cc, builder_registers.cc): the
// body is emitted once whatever the trip count, the values equal an unrolled reference in
// functional and timed runs, trip counts come from memory (zero included), while loops end on a
// register the body reloads, and iterations do not overlap (the per-iteration drain).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "base/error.h"
#include "core/timing/timing_run.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::KernelBuilder;
using kernel::Tensor;
using kernel::Tile;

const num::Format kI32 = num::int_format(num::Dtype::kInt32);

// out[i, :] = 2 x[i, :] for i in [0, n), n from the int32 tensor `n` (or a constant).
isa::Program doubled_rows(const arch::ChipSpec& c, bool n_from_memory, int64_t n_const = 0) {
  KernelBuilder kb(c);
  Tensor x = kb.input("x", num::fp32(), {8, 64});
  Tensor out = kb.inout("out", num::fp32(), {8, 64});
  KernelBuilder::Bound stop{n_const, -1};
  if (n_from_memory) {
    Tensor n = kb.input("n", kI32, {1, 1});
    stop.reg = kb.new_register();
    kb.register_load(stop.reg, n);
  }
  const int32_t i = kb.begin_for({0, -1}, stop, 1);
  Tile t = kb.sbuf("t", num::fp32(), {1, 64});
  Tile u = kb.sbuf("u", num::fp32(), {1, 64});
  kb.dma_copy(t, x(kernel::Idx(0, 1)).dynamic(i, 64, 7));
  kb.tensor_scalar(u, t, {isa::AluOp::kMult, 2.0f});
  kb.dma_copy(out(kernel::Idx(0, 1)).dynamic(i, 64, 7), u);
  kb.end_loop();
  return kb.build();
}

std::vector<float> rows_of(int n) {
  std::vector<float> v(8 * 64);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k % 97) - 40.0f;
  (void)n;
  return v;
}

core::TimingResult run_rows(const isa::Program& p, int32_t n, std::vector<float>& out,
                            core::RunMode mode = core::RunMode::kFunctionalTiming) {
  core::CoreRunner r(chip("trn2"), p, mode);
  r.functional().write_tensor_f32("x", rows_of(8));
  r.functional().write_tensor_f32("out", std::vector<float>(8 * 64, -1.0f));
  if (p.find_tensor("n") != nullptr) {
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &n, 4);
    r.functional().write_tensor("n", b);
  }
  const core::TimingResult res = r.run();
  out = r.functional().read_tensor_f32("out");
  return res;
}

void expect_rows(const std::vector<float>& out, int n) {
  const std::vector<float> x = rows_of(8);
  for (size_t k = 0; k < out.size(); ++k)
    ASSERT_EQ(out[k], static_cast<int>(k / 64) < n ? 2.0f * x[k] : -1.0f) << k;
}

TEST(HardwareLoop, TheBodyIsEmittedOnce) {
  const isa::Program a = doubled_rows(chip("trn2"), false, 2);
  const isa::Program b = doubled_rows(chip("trn2"), false, 8);
  for (isa::Engine e : isa::kAllEngines) EXPECT_EQ(a.stream(e).size(), b.stream(e).size());
  bool branches = false;
  for (const isa::Instruction& in : a.stream(isa::Engine::kSync))
    branches |= in.op == isa::Opcode::kBranch;
  EXPECT_TRUE(branches);
}

TEST(HardwareLoop, ConstantTripCountInBothValueModes) {
  const isa::Program p = doubled_rows(chip("trn2"), false, 6);
  for (core::RunMode mode : {core::RunMode::kFunctionalOnly, core::RunMode::kFunctionalTiming}) {
    std::vector<float> out;
    const core::TimingResult r = run_rows(p, 0, out, mode);
    ASSERT_TRUE(r.ok()) << r.faults.to_string();
    expect_rows(out, 6);
  }
}

TEST(HardwareLoop, TripCountFromMemoryIncludingZero) {
  const isa::Program p = doubled_rows(chip("trn2"), true);
  for (int32_t n : {0, 1, 5, 8}) {
    SCOPED_TRACE(n);
    std::vector<float> out;
    const core::TimingResult r = run_rows(p, n, out);
    ASSERT_TRUE(r.ok()) << r.faults.to_string();
    expect_rows(out, n);
  }
  std::vector<float> out;
  const core::TimingResult bad = run_rows(p, 9, out);  // row 8 is past x
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.faults[0].kind, mem::FaultKind::kIndexRange);
}

// Iterations do not overlap: each adds the same time (its load, compute and store in turn,
// then the drain), so 8 add 8 times what 1 adds over none.
TEST(HardwareLoop, IterationsDoNotOverlap) {
  const isa::Program p = doubled_rows(chip("trn2"), true);
  std::vector<float> out;
  const double t0 = run_rows(p, 0, out).total.v, t1 = run_rows(p, 1, out).total.v,
               t8 = run_rows(p, 8, out).total.v;
  const double one = t1 - t0;
  EXPECT_GT(one, 0.0);
  EXPECT_NEAR((t8 - t0) / one, 8.0, 0.4);
}

// while (r): acc += 1; c -= 1; r = c, with c = c0 at the start: acc counts the iterations.
Tile count_down(KernelBuilder& kb, const Tensor& c0) {
  Tile c = kb.sbuf("c", kI32, {1, 1});
  Tile acc = kb.sbuf("acc", num::fp32(), {1, 1});
  kb.dma_copy(c, c0);
  kb.memset(acc, 0.0);
  const int32_t r = kb.new_register();
  kb.register_load(r, c);
  kb.begin_while(r);
  kb.tensor_scalar(acc, acc, {isa::AluOp::kAdd, 1.0f});
  kb.tensor_scalar(c, c, {isa::AluOp::kSubtract, 1.0f});
  kb.register_load(r, c);
  kb.end_loop();
  return acc;
}

TEST(HardwareLoop, WhileOnARegisterTheBodyReloads) {
  KernelBuilder kb(chip("trn2"));
  Tensor c0 = kb.input("c0", kI32, {1, 1});
  Tensor out = kb.output("out", num::fp32(), {1, 1});
  const Tile acc = count_down(kb, c0);
  kb.dma_copy(out, acc);
  const isa::Program p = kb.build();
  for (int32_t n : {5, 0}) {
    core::CoreRunner run(chip("trn2"), p);
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &n, 4);
    run.functional().write_tensor("c0", b);
    const core::TimingResult res = run.run();
    ASSERT_TRUE(res.ok()) << res.faults.to_string();
    EXPECT_EQ(run.functional().read_tensor_f32("out"), std::vector<float>{static_cast<float>(n)});
  }
}

// register_store writes the counter; a register set before the loop is read inside it.
TEST(HardwareLoop, RegistersStoreAndSet) {
  KernelBuilder kb(chip("trn2"));
  Tensor out = kb.output("out", kI32, {1, 4});
  Tile t = kb.sbuf("t", kI32, {1, 4});
  kb.memset(t, -1.0);
  const int32_t base = kb.new_register();
  kb.register_set(base, 1);
  const int32_t i = kb.begin_for({0, base}, {4, -1}, 1);
  kb.register_store(t(kernel::all, kernel::Idx(0, 1)).dynamic(i, 1, 3), i);
  kb.end_loop();
  kb.dma_copy(out, t);
  const isa::Program p = kb.build();
  core::CoreRunner run(chip("trn2"), p);
  const core::TimingResult res = run.run();
  ASSERT_TRUE(res.ok()) << res.faults.to_string();
  EXPECT_EQ(run.functional().read_tensor_f32("out"), (std::vector<float>{-1, 1, 2, 3}));
}

// Two loops one after the other, the second a while loop whose body reloads its register: the
// waits after the first loop count its signals once (the restore runs once, outside the loop's
// reset count).
TEST(HardwareLoop, TwoLoopsInARow) {
  KernelBuilder kb(chip("trn2"));
  Tensor x = kb.input("x", num::fp32(), {4, 8});
  Tensor c0 = kb.input("c0", kI32, {1, 1});
  Tensor out = kb.output("out", num::fp32(), {4, 8});
  Tile zero = kb.sbuf("zero", num::fp32(), {4, 8});
  kb.memset(zero, 0.0);
  kb.dma_copy(out, zero);
  const int32_t i = kb.begin_for({1, -1}, {3, -1}, 1);
  Tile t = kb.sbuf("t", num::fp32(), {1, 8});
  kb.dma_copy(t, x(kernel::Idx(0, 1)).dynamic(i, 8, 3));
  kb.tensor_scalar(t, t, {isa::AluOp::kMult, 3.0f});
  kb.dma_copy(out(kernel::Idx(0, 1)).dynamic(i, 8, 3), t);
  kb.end_loop();
  const Tile acc = count_down(kb, c0);
  kb.dma_copy(out(kernel::Idx(0, 1), kernel::Idx(0, 1)), acc);
  const isa::Program p = kb.build();
  std::vector<float> xs(32);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k) + 1.0f;
  for (int32_t n : {4, 0}) {
    core::CoreRunner run(chip("trn2"), p);
    run.functional().write_tensor_f32("x", xs);
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &n, 4);
    run.functional().write_tensor("c0", b);
    const core::TimingResult res = run.run();
    ASSERT_TRUE(res.ok()) << res.faults.to_string();
    const std::vector<float> o = run.functional().read_tensor_f32("out");
    for (size_t k = 1; k < 32; ++k)
      EXPECT_EQ(o[k], k / 8 == 1 || k / 8 == 2 ? 3.0f * xs[k] : 0.0f) << k;
    EXPECT_EQ(o[0], static_cast<float>(n));
  }
}

// A loop inside a loop: the outer counter stays readable after the inner loop ends, and tiles
// the body writes whole before reading are the body's own (placed by live range, so sixteen
// PSUM tiles of 2 KiB one after the other fit the eight banks).
TEST(HardwareLoop, NestedLoopsAndBodyLocalTiles) {
  KernelBuilder kb(chip("trn2"));
  Tensor x = kb.input("x", num::fp32(), {4, 128});
  Tensor out = kb.output("out", num::fp32(), {4, 128});
  const int32_t i = kb.begin_for({0, -1}, {4, -1}, 1);
  Tile acc = kb.sbuf("acc", num::fp32(), {1, 128});
  kb.memset(acc, 0.0);
  const int32_t j = kb.begin_for({0, -1}, {2, -1}, 1);
  (void)j;
  kb.tensor_scalar(acc, acc, {isa::AluOp::kAdd, 1.0f});
  kb.end_loop();
  Tile t = kb.sbuf("t", num::fp32(), {1, 128});
  kb.dma_copy(t, x(kernel::Idx(0, 1)).dynamic(i, 128, 3));
  for (int k = 0; k < 16; ++k) {
    Tile ps = kb.psum("ps" + std::to_string(k), num::fp32(), {1, 512});
    kb.memset(ps, static_cast<double>(k));
    kb.tensor_tensor(t, t, ps(kernel::all, kernel::Idx(0, 128)), isa::AluOp::kAdd);
  }
  kb.tensor_tensor(t, t, acc, isa::AluOp::kAdd);
  kb.dma_copy(out(kernel::Idx(0, 1)).dynamic(i, 128, 3), t);
  kb.end_loop();
  const isa::Program p = kb.build();
  std::vector<float> xs(4 * 128);
  for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>(k % 7);
  core::CoreRunner run(chip("trn2"), p);
  run.functional().write_tensor_f32("x", xs);
  const core::TimingResult res = run.run();
  ASSERT_TRUE(res.ok()) << res.faults.to_string();
  const std::vector<float> o = run.functional().read_tensor_f32("out");
  for (size_t k = 0; k < o.size(); ++k) ASSERT_EQ(o[k], xs[k] + 120.0f + 2.0f) << k;
}

TEST(HardwareLoop, MisuseIsAnInputError) {
  KernelBuilder kb(chip("trn2"));
  EXPECT_THROW(kb.end_loop(), InputError);
  EXPECT_THROW(kb.begin_for({0, -1}, {4, -1}, 0), InputError);
  EXPECT_THROW(kb.register_set(40, 1), InputError);  // not allocated
  Tile t = kb.sbuf("t", num::fp32(), {1, 8});
  EXPECT_THROW(t.dynamic(0, 4, 2), InputError);  // reaches element 8 + 3 of 8
  const int32_t i = kb.begin_for({0, -1}, {4, -1}, 1);
  kb.end_loop();
  Tile u = kb.sbuf("u", num::fp32(), {1, 1});
  EXPECT_THROW(kb.memset(u.dynamic(i, 0, 0), 1.0), InputError);  // the counter is gone
  kb.begin_for({0, -1}, {1, -1}, 1);
  EXPECT_THROW(kb.build(), InputError);  // not ended
}

}  // namespace
}  // namespace trnsim::kernel_test
