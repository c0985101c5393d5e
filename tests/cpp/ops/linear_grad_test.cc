// The linear gradients (train_ops.h linear_grad_weight, linear_grad_input) against fp64
// references, and their simulated time against a closed-form lower bound.
//
// Tolerance: none, the results are compared exactly. The inputs are multiples of 1/64 times a
// power of two (ops_test_util.h), so every product is exact in fp32 and every partial sum is a
// multiple of the products' quantum well inside fp32's 24 bits:
//   dw: x (multiples of 2^-5, |x| <= 2) times dy (2^-6, |dy| <= 1): multiples of 2^-11, sums
//       over at most 600 tokens below 2^11, 22 bits; db: multiples of 2^-6 below 2^10;
//   dx: dy (2^-6, |dy| <= 1) times w (2^-10, |w| <= 1/16): multiples of 2^-16, sums over at
//       most 1120 columns below 2^7, 23 bits; dacc (2^-6, below 1) adds exactly.
// So the kernel's fp32 accumulation gives the reference's exact sum whatever its order, and
// both round the same value to bf16 (dx); the transposes (DMA, TensorE) move values exactly.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "core/timing/timing_run.h"
#include "ops/train_ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class LinearGradTest : public OpsTest {};

int64_t sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

// The dy tensors' values, and their concatenation [T, N].
struct Dy {
  Inputs in;
  std::vector<float> cat;
};

Dy dy_values(int64_t T, const std::vector<int64_t>& splits, uint64_t seed) {
  Dy d;
  const int64_t N = sum(splits);
  d.cat.assign(static_cast<size_t>(T * N), 0.0f);
  int64_t g = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    const int64_t n = splits[i];
    std::vector<float> v = values(T * n, seed + i, 1.0f);  // multiples of 1/64 in [-1, 1]
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < n; ++c) d.cat[t * N + g + c] = v[t * n + c];
    d.in["dy" + std::to_string(i)] = std::move(v);
    g += n;
  }
  return d;
}

// Rounds a copy of `spec` down to a core whose SBUF allocates only `usable` bytes per
// partition (and, optionally, without DMA transposes), so that smaller shapes take the
// kernels' chunked and TensorE paths.
arch::ChipSpec variant(const arch::ChipSpec& spec, int64_t usable, bool dma_transpose) {
  arch::ChipSpec v = spec;
  if (usable > 0) v.core.sbuf.usable_bytes_per_partition = usable;
  v.core.dma.transpose = v.core.dma.transpose && dma_transpose;
  return v;
}

// ---------------------------------------------------------------- weight gradient

void check_grad_weight(const arch::ChipSpec& spec, const ops::LinearGradWeightSpec& s,
                       uint64_t seed) {
  const int64_t T = s.tokens, K = s.in, N = sum(s.splits);
  const isa::Program p = ops::linear_grad_weight(spec, s);
  expect_race_free(p, spec);
  const Dy dy = dy_values(T, s.splits, seed + 1);
  Inputs in = dy.in;
  in["x"] = values(T * K, seed, 2.0f);  // multiples of 1/32 in [-2, 2]
  auto out = run(spec, p, in);

  const std::vector<float>& x = in.at("x");
  std::vector<double> dw(static_cast<size_t>(K * N), 0.0), db(static_cast<size_t>(N), 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const float* dyr = &dy.cat[t * N];
    for (int64_t k = 0; k < K; ++k) {
      const double xv = x[t * K + k];
      double* row = &dw[k * N];
      for (int64_t n = 0; n < N; ++n) row[n] += xv * dyr[n];
    }
    for (int64_t n = 0; n < N; ++n) db[n] += dyr[n];
  }
  EXPECT_TRUE(close(out["dw"], dw, N, 0.0, 1.0)) << "dw";
  if (s.bias) {
    EXPECT_TRUE(close(out["db"], db, N, 0.0, 1.0)) << "db";
  }
}

ops::LinearGradWeightSpec weight_spec(int64_t T, int64_t K, std::vector<int64_t> splits,
                                      bool bias) {
  ops::LinearGradWeightSpec s;
  s.tokens = T;
  s.in = K;
  s.splits = std::move(splits);
  s.bias = bias;
  return s;
}

// Partial tiles everywhere: 200 tokens (a 72-token last tile), K = 160 (a 32-row last K tile,
// whose spare stationary columns carry the bias's ones column), splits of 96 and 200 columns.
TEST_P(LinearGradTest, LinearGradWeight) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const bool bias : {false, true}) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    check_grad_weight(spec, weight_spec(200, 160, {96, 200}, bias), 10);
  }
}

// K a multiple of 128 with a bias: the ones column is a one-column K tile of its own. 600
// tokens: loads of two whole token tiles, then the short one alone.
TEST_P(LinearGradTest, LinearGradWeightOnesTile) {
  const arch::ChipSpec& spec = chip(GetParam());
  check_grad_weight(spec, weight_spec(600, 256, {96, 200}, true), 20);
}

// Several groups of PSUM tiles: 4 column blocks (512 + 88 of the first split, 512 + 8 of the
// second) and 6 K tiles (700 + the ones row) do not fit 8 banks at once. On a core with 12 KiB
// of SBUF nothing but the smallest plan fits: everything streamed, one token tile per load,
// one bank per pass.
TEST_P(LinearGradTest, LinearGradWeightGroups) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const int64_t kib : {0, 12})
    for (const bool bias : {false, true}) {
      SCOPED_TRACE(::testing::Message() << (bias ? "bias" : "no bias") << ", SBUF "
                                        << (kib > 0 ? std::to_string(kib) + " KiB" : "whole"));
      check_grad_weight(variant(spec, kib * 1024, true), weight_spec(300, 700, {600, 520}, bias),
                        30);
    }
}

// A core with 24 KiB of SBUF: dy (2200 columns) does not fit whole, so each column group's dy
// is kept while the group's two K passes use it (and x is kept whole).
TEST_P(LinearGradTest, LinearGradWeightDyPerGroup) {
  const arch::ChipSpec v = variant(chip(GetParam()), 24 * 1024, true);
  check_grad_weight(v, weight_spec(400, 700, {1500, 700}, true), 35);
}

// ---------------------------------------------------------------- input gradient

struct InputCase {
  Inputs in;
  std::vector<double> dx;  // without dacc
};

InputCase input_case(const ops::LinearGradInputSpec& s, uint64_t seed) {
  const int64_t T = s.tokens, K = s.in, N = sum(s.splits);
  InputCase c;
  Dy dy = dy_values(T, s.splits, seed + 1);
  c.in = std::move(dy.in);
  c.in["w"] = values(K * N, seed, 1.0f / 16);      // multiples of 1/1024 in [-1/16, 1/16]
  c.in["dacc"] = values(T * K, seed + 100, 1.0f);  // multiples of 1/64 in [-1, 1]
  const std::vector<float>& w = c.in.at("w");
  c.dx.assign(static_cast<size_t>(T * K), 0.0);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t k = 0; k < K; ++k) {
      double a = 0;
      const float* dyr = &dy.cat[t * N];
      const float* wr = &w[k * N];
      for (int64_t n = 0; n < N; ++n) a += double{dyr[n]} * wr[n];
      c.dx[t * K + k] = a;
    }
  return c;
}

void check_grad_input(const arch::ChipSpec& spec, const ops::LinearGradInputSpec& s,
                      const InputCase& c) {
  const isa::Program p = ops::linear_grad_input(spec, s);
  expect_race_free(p, spec);
  Inputs in = c.in;
  if (!s.accumulate) in.erase("dacc");
  auto out = run(spec, p, in);
  std::vector<double> want(c.dx.size());
  const std::vector<float>& dacc = c.in.at("dacc");
  for (size_t i = 0; i < want.size(); ++i) {
    const double v = s.accumulate ? c.dx[i] + dacc[i] : c.dx[i];
    want[i] = s.dtype.storage_bytes == 2 ? bf(v) : v;  // fp32: the exact sum
  }
  EXPECT_TRUE(close(out["dx"], want, s.in, 0.0, 1.0)) << "dx";
}

ops::LinearGradInputSpec input_spec(int64_t T, int64_t K, std::vector<int64_t> splits) {
  ops::LinearGradInputSpec s;
  s.tokens = T;
  s.in = K;
  s.splits = std::move(splits);
  return s;
}

// Partial tiles: 200 tokens, K = 160 (a 160-column PSUM bank), contraction tiles of 96, 128
// and 72 columns (per split). DMA transposes where the generation has them, and TensorE
// transposes on each generation.
TEST_P(LinearGradTest, LinearGradInput) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::LinearGradInputSpec s = input_spec(200, 160, {96, 200});
  const InputCase c = input_case(s, 40);
  for (const bool dma : {true, false}) {
    const arch::ChipSpec v = variant(spec, 0, dma);
    if (!dma && !spec.core.dma.transpose) continue;  // the same as the case before
    for (const bool acc : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << (dma ? "dma" : "tensor") << " transposes" << (acc ? ", accumulate" : ""));
      s.accumulate = acc;
      check_grad_input(v, s, c);
    }
  }
}

// w^T too big for a shrunk SBUF: N in chunks, w^T and dy^T made again per K block, the
// accumulators of the three token tiles (the last of 44 tokens) open across the chunks; two K
// blocks (1024 + 276 columns), contraction tiles of 128 columns but the splits' last, of 88
// and 8.
// 48 KiB: chunks of one tile (TensorE transposes) or three (DMA); 80 KiB: chunks of two tiles
// (TensorE), or w^T and dy^T whole without chunks (DMA).
TEST_P(LinearGradTest, LinearGradInputChunks) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::LinearGradInputSpec s = input_spec(300, 1300, {600, 520});
  s.accumulate = true;
  const InputCase c = input_case(s, 50);
  for (const int64_t kib : {48, 80})
    for (const bool dma : {true, false}) {
      if (!dma && !spec.core.dma.transpose) continue;
      SCOPED_TRACE(::testing::Message() << kib << " KiB, " << (dma ? "dma" : "tensor"));
      check_grad_input(variant(spec, kib * 1024, dma), s, c);
    }
}

// dy^T of the token block fits the (shrunk) SBUF and is made once, w^T (2600 columns of K)
// does not: w^T in chunks of one tile, made per K block (1024, 1024, 552 columns).
TEST_P(LinearGradTest, LinearGradInputDyResident) {
  const arch::ChipSpec& spec = chip(GetParam());
  const ops::LinearGradInputSpec s = input_spec(300, 2600, {200});
  const InputCase c = input_case(s, 60);
  for (const bool dma : {true, false}) {
    if (!dma && !spec.core.dma.transpose) continue;
    SCOPED_TRACE(dma ? "dma" : "tensor");
    // TensorE transposes stage w and dy in SBUF: 10 KiB more.
    const bool by_dma = dma && spec.core.dma.transpose;
    check_grad_input(variant(spec, (by_dma ? 14 : 24) * 1024, dma), s, c);
  }
}

// A copy of `spec` with `usable` bytes of SBUF per partition whose DMA gathers rows at a
// tenth of its rate for whole blocks (the rate of its engines): w^T does not fit SBUF and
// remaking it per token block from gathered rows is slow, so the kernel transposes w once into
// an HBM scratch and streams it per token block.
arch::ChipSpec scratch_variant(const arch::ChipSpec& spec, int64_t usable, bool dma_transpose) {
  arch::ChipSpec v = variant(spec, usable, dma_transpose);
  const double rate = v.core.dma.engines * v.core.dma.engine_bandwidth_practical_gbps;
  v.core.dma.core_block_bandwidth_gbps = rate;
  v.core.dma.core_bandwidth_gbps = rate / 10;
  return v;
}

bool has_scratch(const isa::Program& p) {
  return std::any_of(p.tensors.begin(), p.tensors.end(), [](const isa::HbmTensor& t) {
    return t.kind == isa::TensorKind::kScratch && t.name == "wT_scratch";
  });
}

// Whether the program loads 128 whole rows of `cols` elements (of a [*, cols] HBM tensor) in
// one DMA.
bool loads_whole_rows(const isa::Program& p, int64_t cols) {
  for (const isa::Stream& st : p.streams)
    for (const isa::Instruction& in : st)
      if (in.op == isa::Opcode::kDmaCopy && in.num_operands > 1) {
        const isa::AccessPattern& src = in.operands[1];
        if (src.space == isa::Space::kHbm && src.num_partitions == 128 &&
            src.partition_stride == cols && src.free_elements() == cols)
          return true;
      }
  return false;
}

// The scratch path (w^T transposed once into HBM, streamed per token block) on small shapes
// with partial tiles everywhere: 520 tokens (token blocks balanced, an 8-token last tile),
// K = 700 (K blocks of 512 and 188 columns, or one of 700; a 60-column last K tile, padded in
// SBUF), contraction tiles per split (128, 128, 44 | 128, 122; or 4 x 128, 88 | 3 x 128, 16),
// dacc added. With the plan's estimates as they stand, the chip variants reach: at 40 KiB dy^T
// kept for two token blocks, made per token tile (TensorE transposes; on trn3 with the pass
// fused into the first block); at 48 KiB the same with the pass fused into the first block (in
// chunks, or one chunk on NC-v3+); at 32 KiB dy^T kept for one block and a chunk, made per
// chunk (TensorE, or DMA transposes of two token tiles); at 56 KiB on trn1 the same with
// windows of three token tiles and K blocks of two banks.
TEST_P(LinearGradTest, LinearGradInputScratch) {
  const arch::ChipSpec& spec = chip(GetParam());
  const bool trn1 = !spec.core.dma.transpose;
  struct Case {
    std::vector<int64_t> splits;
    int64_t kib;
    bool dma;
  };
  std::vector<Case> cases{
      {{300, 250}, 40, false}, {{300, 250}, 48, false}, {{600, 400}, 32, false}};
  cases.push_back({{600, 400}, trn1 ? 56 : 32, !trn1});
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message() << "splits " << k.splits[0] << ", " << k.splits[1] << ", "
                                      << k.kib << " KiB, " << (k.dma ? "dma" : "tensor"));
    ops::LinearGradInputSpec s = input_spec(520, 700, k.splits);
    s.accumulate = true;
    const arch::ChipSpec v = scratch_variant(spec, k.kib * 1024, k.dma);
    EXPECT_TRUE(has_scratch(ops::linear_grad_input(v, s)));
    check_grad_input(v, s, input_case(s, 90));
  }
}

// One token block (256 tokens) with the pass fused into it: w's rows loaded whole (1000
// columns, 9 contraction tiles: more than the chunk plans stage at once), transposed and used
// in place, no scratch written (nothing streams it).
TEST_P(LinearGradTest, LinearGradInputFusedPass) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::LinearGradInputSpec s = input_spec(256, 1100, {600, 400});
  s.accumulate = true;
  const arch::ChipSpec v = scratch_variant(spec, 64 * 1024, false);
  const isa::Program p = ops::linear_grad_input(v, s);
  EXPECT_FALSE(has_scratch(p));
  EXPECT_TRUE(loads_whole_rows(p, 1000));
  check_grad_input(v, s, input_case(s, 95));
}

// Shapes smaller than a tile everywhere, and fp32 data (matmuls at the fp32 rate, 4-byte DMA
// transposes, fp32 PSUM transposes).
TEST_P(LinearGradTest, LinearGradSmallAndFp32) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const bool fp32 : {false, true}) {
    SCOPED_TRACE(fp32 ? "fp32" : "bf16");
    const num::Format dt = fp32 ? num::fp32() : num::bf16();
    ops::LinearGradWeightSpec ws = weight_spec(5, 3, {1, 2}, true);
    ws.dtype = dt;
    check_grad_weight(spec, ws, 70);
    ws = weight_spec(200, 160, {96, 200}, true);
    ws.dtype = dt;
    check_grad_weight(spec, ws, 75);
    ops::LinearGradInputSpec is = input_spec(5, 3, {1, 2});
    is.dtype = dt;
    is.accumulate = true;
    check_grad_input(spec, is, input_case(is, 80));
    is = input_spec(200, 160, {96, 200});
    is.dtype = dt;
    is.accumulate = true;
    check_grad_input(spec, is, input_case(is, 85));
  }
}

TEST_P(LinearGradTest, LinearGradRefusesBadShapes) {
  const arch::ChipSpec& spec = chip(GetParam());
  EXPECT_THROW(ops::linear_grad_input(spec, input_spec(128, 128, {})), InputError);
  EXPECT_THROW(ops::linear_grad_input(spec, input_spec(128, 128, {64, 0})), InputError);
  EXPECT_THROW(ops::linear_grad_input(spec, input_spec(0, 128, {64})), InputError);
  EXPECT_THROW(ops::linear_grad_weight(spec, weight_spec(128, 128, {}, false)), InputError);
  EXPECT_THROW(ops::linear_grad_weight(spec, weight_spec(128, 128, {-4}, true)), InputError);
  EXPECT_THROW(ops::linear_grad_weight(spec, weight_spec(128, 0, {64}, false)), InputError);
}

// ---------------------------------------------------------------- timing

// The lower bound of a kernel: TensorE streaming `columns` moving columns (one per cycle at its
// clock), or the DMA moving `bytes` at the core's best rate (its engines' practical rate, the
// HBM stack's bandwidth and the block cap, whichever is lowest), whichever takes longer.
double bound_ns(const arch::ChipSpec& spec, double columns, double bytes) {
  const auto& dma = spec.core.dma;
  double rate = dma.engines * dma.engine_bandwidth_practical_gbps;  // bytes per ns
  rate =
      std::min(rate, spec.chip.hbm.bandwidth_gbps / spec.chip.hbm.stacks.value_or(spec.chip.cores));
  if (dma.core_block_bandwidth_gbps) rate = std::min(rate, *dma.core_block_bandwidth_gbps);
  return std::max(columns / spec.core.tensor.clock_ghz, bytes / rate);
}

void expect_near_bound(const std::string& name, const arch::ChipSpec& spec, const isa::Program& p,
                       double bound, double max_ratio = 3) {
  const core::TimingResult r = core::run_timing(spec, p);
  ASSERT_TRUE(r.ok()) << r.summary();
  const double ns = static_cast<double>(r.total.v) / 1000;
  std::cout << name << " on " << spec.meta.name << ": " << ns / 1000 << " us, bound "
            << bound / 1000 << " us (" << ns / bound << "x), TensorE busy "
            << r.busy_percent(isa::Engine::kTensor) << "%\n";
  ::testing::Test::RecordProperty(name + "_ns", std::to_string(static_cast<int64_t>(ns)));
  EXPECT_LE(ns, max_ratio * bound) << name;
}

constexpr int64_t kT = 2048, kK = 1024, kN = 1024;

TEST_P(LinearGradTest, LinearGradWeightTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  const ops::LinearGradWeightSpec s = weight_spec(kT, kK, {kN}, false);
  // (T / 128) x (K / 128) matmuls of N columns; x and dy read, dw (fp32) written once.
  const double columns = double{kT} / 128 * (kK / 128) * kN;
  const double bytes = 2.0 * kT * kK + 2.0 * kT * kN + 4.0 * kK * kN;
  expect_near_bound("linear_grad_weight", spec, ops::linear_grad_weight(spec, s),
                    bound_ns(spec, columns, bytes));
}

TEST_P(LinearGradTest, LinearGradInputTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::LinearGradInputSpec s = input_spec(kT, kK, {kN});
  s.accumulate = true;
  // (T / 128) x (N / 128) matmuls of K columns; dy, w, dacc read, dx written once.
  const double columns = double{kT} / 128 * (kN / 128) * kK;
  const double bytes = 2.0 * kT * kN + 2.0 * kK * kN + 2.0 * 2 * kT * kK;
  expect_near_bound("linear_grad_input", spec, ops::linear_grad_input(spec, s),
                    bound_ns(spec, columns, bytes));
}

// Training-size input gradients: Llama 2 7B's gate and up projections at TP 8 (4096 tokens,
// 4096 -> 2 x 1376), its LM head (4096 -> 4000) and down projection (1376 -> 4096) at TP 8,
// Llama 3 8B's up projection (8192 tokens, 4096 -> 14336). w^T does not fit SBUF but in the
// third; on NC-v2, whose loads that gather parts of rows are slow, it is transposed once into
// the HBM scratch (the pass beside the first token block where SBUF allows) and streamed per
// token block; NC-v3+ remake it per token block by DMA transposes, hidden under the matmuls.
// Each within `limit` of the bound (NC-v2 reaches 1.20-1.26x on the scratch path, 1.45x on the
// third; NC-v3+ 1.00-1.05x).
TEST_P(LinearGradTest, LinearGradInputLargeTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  struct Shape {
    int64_t tokens, in;
    std::vector<int64_t> splits;
    double limit;
  };
  const std::vector<Shape> shapes{{4096, 4096, {1376, 1376}, 1.4},
                                  {4096, 4096, {4000}, 1.4},
                                  {4096, 1376, {4096}, 1.6},
                                  {8192, 4096, {14336}, 1.4}};
  for (const Shape& sh : shapes) {
    const ops::LinearGradInputSpec s = input_spec(sh.tokens, sh.in, sh.splits);
    const auto T = static_cast<double>(sh.tokens), K = static_cast<double>(sh.in);
    const auto N = static_cast<double>(sum(sh.splits));
    // (T / 128) x (N / 128) matmuls of K columns; dy and w read, dx written once.
    const double columns = T / 128 * (N / 128) * K;
    const double bytes = 2.0 * T * N + 2.0 * K * N + 2.0 * T * K;
    expect_near_bound(fmt::format("linear_grad_input {}x{}x{}", sh.tokens, sh.in, sum(sh.splits)),
                      spec, ops::linear_grad_input(spec, s), bound_ns(spec, columns, bytes),
                      sh.limit);
  }
}

// A training-size layer (Llama 3 8B's MLP up projection, 4096 -> 14336, 8192 tokens) builds
// in seconds, with instructions in proportion to its matmuls.
TEST_P(LinearGradTest, LinearGradBigShapesBuild) {
  const arch::ChipSpec& spec = chip(GetParam());
  const auto t0 = std::chrono::steady_clock::now();
  const isa::Program w = ops::linear_grad_weight(spec, weight_spec(8192, 4096, {14336}, true));
  const isa::Program x = ops::linear_grad_input(spec, input_spec(8192, 4096, {14336}));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // (8192 / 128) x (4096 / 128) x (14336 / 512) = 57344 matmuls each (one more K tile for the
  // bias), each with at most a stationary load; the input gradient's transposes (on NC-v2 w^T
  // once into the scratch, dy^T once per token block), their copies and the loads of the
  // scratch add about half an instruction per matmul.
  std::cout << "big shapes: built in " << s << " s, " << w.num_instructions() << " + "
            << x.num_instructions() << " instructions\n";
  // The build time is printed, not asserted: speed is bench/'s (a timed unit test fails on a
  // loaded host, and under the sanitizers these builds take ~30 s).
  EXPECT_LT(w.num_instructions(), 3 * 57344u);
  EXPECT_LT(x.num_instructions(), 3 * 57344u);
}

INSTANTIATE_TEST_SUITE_P(Generations, LinearGradTest, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
