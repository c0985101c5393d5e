// The row-wise training kernels (train_ops.h): norm_backward, act_backward and
// embedding_backward, against fp64 references written here, on trn1, trn2 and trn3, with
// partial tiles (200 tokens: 128 + 72; 160 and 600 features: a partial bn_stats chunk and PSUM
// bank; rows wider than one tile's columns; norm_backward's rows of many chunks, 5000 and
// 16384 features), every program checked race-free; the refusals and the index fault; and
// timing checks against closed-form bounds (printed with the ratio; norm_backward's over wide
// rows too, without spills). Inputs are exact in bf16 (ops_test_util.h).
//
// Tolerances, per element, |got - want| <= rel * max(|want|, floor, mag):
//   dx, dgate, dup (bf16)  rel 1e-2, floor 1e-2 (1e-3 for act_backward): the reference is the
//              fp64 value rounded to bf16 as the kernel rounds its fp32 one, so they differ by
//              one bf16 ulp (2^-8..2^-7 of the value) where the two fall on either side of a
//              rounding boundary; 1e-2 passes one ulp and fails most two-ulp errors. The
//              kernel's fp32 error is ~1e-6 of the terms (order 1 here; order 20 inside the
//              composed gelu tanh derivative, whose cancellation near its zero at x ~ -0.75
//              leaves ~1e-6 absolute), far under the floors' 1e-4 / 1e-5 absolute.
//   dgamma (fp32)  rel 2e-5 of mag = sum over tokens of |dy * xh|: each fp32 step (x - mean,
//              the products, ~130 sequential adds: 128 partitions in TensorE's fp32
//              accumulation, then one per tile in PSUM) errs by at most 2^-24 of a partial sum
//              bounded by mag, <= ~135 * 6e-8 = 8e-6 of mag.
//   dbeta, relu's dx, dtable  exact: sums of multiples of 1/64 below 2^10 are exact in fp32
//              (and so in any order), and relu's dy * (x > 0) is dy or 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/error.h"
#include "core/exec/functional_runner.h"
#include "core/timing/timing_run.h"
#include "ops/train_ops.h"
#include "ops_test_util.h"

namespace trnsim::kernel_test {
namespace {

class TrainRowOpsTest : public OpsTest {};

// ---------------------------------------------------------------- timing helpers

// ns for `passes` passes over `elements` of one-input ops on an engine (one element per
// partition per cycle: ScalarE's activation, HARDWARE.md s8.1).
double one_input_ns(const arch::ChipSpec& c, const arch::EngineSpec& e, double passes,
                    double elements) {
  return passes * elements / (e.clock_ghz * c.core.sbuf.partitions);
}

// ns for `passes` passes over `elements` of fp32 two-input ops (tensor_tensor: 2 cycles per
// element per partition, HARDWARE.md s8.1) shared by VectorE and GpSimd, the latter on its own
// clock (core/cost/cost_gpsimd.cc); on NC-v2 they share one SBUF port, so only the faster
// counts.
double two_input_ns(const arch::ChipSpec& c, double passes, double elements) {
  const double v = c.core.vector.clock_ghz, g = c.core.gpsimd.clock_ghz;
  const double ghz = c.core.ports.vector_gpsimd_sbuf_conflict ? std::max(v, g) : v + g;
  return passes * 2 * elements / (ghz * c.core.sbuf.partitions);
}

double run_ns(const arch::ChipSpec& spec, const isa::Program& p) {
  const core::TimingResult r = core::run_timing(spec, p);
  EXPECT_TRUE(r.ok()) << r.summary();
  return static_cast<double>(r.total.v) * 1e-3;
}

// ---------------------------------------------------------------- norm backward

struct NormRef {
  std::vector<double> dx, dgamma, dgamma_mag, dbeta;
};

// fp64: statistics from x, xh, g = dy * gamma, dx = rstd (g - mean(g) - xh mean(g xh)) + dres.
NormRef norm_backward_ref(const ops::NormGradSpec& s, const Inputs& in) {
  const int64_t T = s.tokens, F = s.features;
  const bool layer = s.norm == Norm::kLayer;
  NormRef r;
  r.dx.resize(static_cast<size_t>(T * F));
  r.dgamma.assign(static_cast<size_t>(F), 0.0);
  r.dgamma_mag.assign(static_cast<size_t>(F), 0.0);
  r.dbeta.assign(static_cast<size_t>(F), 0.0);
  const std::vector<float>&x = in.at("x"), &dy = in.at("dy"), &gamma = in.at("gamma");
  std::vector<double> xh(static_cast<size_t>(F)), g(static_cast<size_t>(F));
  for (int64_t t = 0; t < T; ++t) {
    const float* xr = &x[t * F];
    double mean = 0, var = 0;
    if (layer) {
      for (int64_t f = 0; f < F; ++f) mean += xr[f];
      mean /= static_cast<double>(F);
    }
    for (int64_t f = 0; f < F; ++f) var += (xr[f] - mean) * (xr[f] - mean);
    const double rstd = 1.0 / std::sqrt(var / static_cast<double>(F) + s.eps);
    double mg = 0, mgx = 0;
    for (int64_t f = 0; f < F; ++f) {
      xh[f] = (xr[f] - mean) * rstd;
      g[f] = dy[t * F + f] * double{gamma[f]};
      mg += g[f];
      mgx += g[f] * xh[f];
      r.dgamma[f] += dy[t * F + f] * xh[f];
      r.dgamma_mag[f] += std::fabs(dy[t * F + f] * xh[f]);
      r.dbeta[f] += dy[t * F + f];
    }
    mg = layer ? mg / static_cast<double>(F) : 0.0;
    mgx /= static_cast<double>(F);
    for (int64_t f = 0; f < F; ++f) {
      double v = rstd * (g[f] - mg - xh[f] * mgx);
      if (s.residual) v += in.at("dres")[t * F + f];
      r.dx[t * F + f] = bf(v);
    }
  }
  return r;
}

// Runs the kernel for `s` on inputs exact in bf16 and checks dx, dgamma (and dbeta) against
// the fp64 reference.
void check_norm_backward(const arch::ChipSpec& spec, const ops::NormGradSpec& s) {
  const int64_t T = s.tokens, F = s.features;
  const isa::Program p = ops::norm_backward(spec, s);
  expect_race_free(p, spec);
  EXPECT_EQ(p.spill.tiles, 0);
  Inputs in;
  in["x"] = values(T * F, 101, 2.0f, s.norm == Norm::kLayer ? 0.5f : 0.0f);
  in["dy"] = values(T * F, 102, 1.0f);
  in["gamma"] = values(F, 103, 0.5f, 1.0f);
  if (s.residual) in["dres"] = values(T * F, 104, 1.0f);
  auto out = run(spec, p, in);
  const NormRef want = norm_backward_ref(s, in);
  EXPECT_TRUE(close(out["dx"], want.dx, F, 1e-2, 1e-2)) << "dx";
  EXPECT_TRUE(close(out["dgamma"], want.dgamma, F, 2e-5, 1e-6, &want.dgamma_mag)) << "dgamma";
  if (s.norm == Norm::kLayer) {
    const std::vector<float> dbeta(want.dbeta.begin(), want.dbeta.end());  // exact
    EXPECT_TRUE(equal(out["dbeta"], dbeta, F)) << "dbeta";
  }
}

TEST_P(TrainRowOpsTest, NormBackward) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const int64_t F : {int64_t{160}, int64_t{600}})
    for (const Norm n : {Norm::kRms, Norm::kLayer})
      for (const bool residual : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << ops::name(n) << " features " << F << " residual " << residual);
        ops::NormGradSpec s;
        s.tokens = 200;
        s.features = F;
        s.norm = n;
        s.residual = residual;
        check_norm_backward(spec, s);
      }
}

// Rows of many column chunks: 5000 features are nine chunks of 512 and a partial one of 392
// (its own dgamma accumulator), with dres; 16384 (RMSNorm) load dres per group where the
// rows of dres do not fit (trn1, trn2) and the tiles do not all overlap.
TEST_P(TrainRowOpsTest, NormBackwardWideRows) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const auto& [F, n] : std::vector<std::pair<int64_t, Norm>>{
           {5000, Norm::kRms}, {5000, Norm::kLayer}, {16384, Norm::kRms}}) {
    SCOPED_TRACE(::testing::Message() << ops::name(n) << " features " << F);
    ops::NormGradSpec s;
    s.tokens = F > 8192 ? 130 : 200;
    s.features = F;
    s.norm = n;
    s.residual = true;
    check_norm_backward(spec, s);
  }
}

TEST_P(TrainRowOpsTest, NormBackwardRefusesNone) {
  ops::NormGradSpec s;
  s.tokens = 200;
  s.features = 160;
  s.norm = Norm::kNone;
  EXPECT_THROW(ops::norm_backward(chip(GetParam()), s), InputError);
}

// ---------------------------------------------------------------- activation backward

// act'(v) in fp64, from each function's closed form.
double act_grad_ref(Act a, double v) {
  const double s = 1.0 / (1.0 + std::exp(-v));
  switch (a) {
    case Act::kSilu:
    case Act::kGluSilu:
      return s * (1.0 + v * (1.0 - s));
    case Act::kGelu:
    case Act::kGluGelu:
      return 0.5 * (1.0 + std::erf(v / std::numbers::sqrt2)) +
             v * std::exp(-0.5 * v * v) / std::sqrt(2.0 * std::numbers::pi);
    case Act::kGeluTanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
      const double t = std::tanh(k * (v + c * v * v * v));
      return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * k * (1.0 + 3.0 * c * v * v);
    }
    case Act::kRelu:
      return v > 0 ? 1.0 : 0.0;
    case Act::kNone:
      break;
  }
  return 1.0;
}

TEST_P(TrainRowOpsTest, ActBackward) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t T = 200;
  // 4500 features: rows wider than a tile's columns, in blocks of 2250 (gelu tanh: 1500).
  for (const int64_t F : {int64_t{160}, int64_t{600}, int64_t{4500}})
    for (const Act a :
         {Act::kSilu, Act::kGelu, Act::kGeluTanh, Act::kRelu, Act::kGluSilu, Act::kGluGelu}) {
      SCOPED_TRACE(::testing::Message() << ops::name(a) << " features " << F);
      ops::ActGradSpec s;
      s.tokens = T;
      s.features = F;
      s.act = a;
      const isa::Program p = ops::act_backward(spec, s);
      expect_race_free(p, spec);
      const bool glu = ops::is_glu(a);
      Inputs in;
      const std::string xn = glu ? "gate" : "x";
      in[xn] = values(T * F, 111, 4.0f);  // [-4, 4]: both tails and the curved middle
      in["dy"] = values(T * F, 112, 1.0f);
      if (glu) in["up"] = values(T * F, 113, 2.0f);
      auto out = run(spec, p, in);
      const size_t n = static_cast<size_t>(T * F);
      std::vector<double> d(n), u(n);
      for (size_t i = 0; i < n; ++i) {
        const double v = in[xn][i], dy = in["dy"][i];
        d[i] = bf(dy * act_grad_ref(a, v) * (glu ? double{in["up"][i]} : 1.0));
        if (glu) u[i] = bf(dy * act_ref(a, v));
      }
      if (a == Act::kRelu) {
        EXPECT_TRUE(equal(out["dx"], std::vector<float>(d.begin(), d.end()), F)) << "dx";
      } else if (!glu) {
        EXPECT_TRUE(close(out["dx"], d, F, 1e-2, 1e-3)) << "dx";
      } else {
        EXPECT_TRUE(close(out["dgate"], d, F, 1e-2, 1e-3)) << "dgate";
        EXPECT_TRUE(close(out["dup"], u, F, 1e-2, 1e-3)) << "dup";
      }
    }
}

TEST_P(TrainRowOpsTest, ActBackwardRefusesNone) {
  ops::ActGradSpec s;
  s.tokens = 200;
  s.features = 160;
  s.act = Act::kNone;
  EXPECT_THROW(ops::act_backward(chip(GetParam()), s), InputError);
}

// ---------------------------------------------------------------- embedding backward

// 300 tokens (tiles of 128, 128, 44) over a vocabulary of 50: every id repeats inside a tile
// and across tiles. dtable starts as garbage, so the zeroing is checked too; hidden 600 is two
// PSUM chunks (one partial), 96 one, 8300 two blocks of 4150 columns. The zeroing's pieces: 50 x
// 600 = 30000 elements are 127 rows of 235 and 155 more (no whole block); 5000 x 130 = 650000 are a
// [128, 4096] block, 30 rows of 4096 and 2832 more.
TEST_P(TrainRowOpsTest, EmbeddingBackward) {
  const arch::ChipSpec& spec = chip(GetParam());
  const int64_t T = 300;
  for (const auto& [V, H] :
       std::vector<std::pair<int64_t, int64_t>>{{50, 600}, {50, 96}, {5000, 130}, {50, 8300}}) {
    SCOPED_TRACE(::testing::Message() << "vocab " << V << " hidden " << H);
    ops::EmbeddingGradSpec s;
    s.tokens = T;
    s.vocab = V;
    s.hidden = H;
    const isa::Program p = ops::embedding_backward(spec, s);
    expect_race_free(p, spec);
    Inputs in;
    in["ids"] = small_ints(T, 0, static_cast<int>(std::min<int64_t>(V, 50) - 1), 121);
    in["dy"] = values(T * H, 122, 1.0f);
    in["dtable"] = values(V * H, 123, 8.0f, 3.0f);
    auto out = run(spec, p, in);
    std::vector<double> sum(static_cast<size_t>(V * H), 0.0);
    for (int64_t t = 0; t < T; ++t) {
      const auto id = static_cast<int64_t>(in["ids"][t]);
      for (int64_t j = 0; j < H; ++j) sum[id * H + j] += in["dy"][t * H + j];
    }
    EXPECT_TRUE(equal(out["dtable"], std::vector<float>(sum.begin(), sum.end()), H));
  }
}

// An id outside the vocabulary is the gather's index_range fault.
TEST_P(TrainRowOpsTest, EmbeddingBackwardIdOutOfRangeFaults) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::EmbeddingGradSpec s;
  s.tokens = 130;
  s.vocab = 20;
  s.hidden = 64;
  const isa::Program p = ops::embedding_backward(spec, s);
  std::vector<float> ids = small_ints(130, 0, 19, 131);
  ids[129] = 20;
  core::FunctionalRunner runner(spec, p);
  runner.write_tensor_f32("ids", ids);
  runner.write_tensor_f32("dy", values(130 * 64, 132, 1.0f));
  EXPECT_FALSE(runner.run().ok);
  bool index_fault = false;
  for (const mem::Fault& f : runner.faults()) index_fault |= f.kind == mem::FaultKind::kIndexRange;
  EXPECT_TRUE(index_fault);
}

TEST_P(TrainRowOpsTest, EmbeddingBackwardRefusesBadSizes) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const auto& [T, V, H] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {0, 10, 10}, {10, 0, 10}, {10, int64_t{1} << 25, 10}, {10, 10, 0}}) {
    ops::EmbeddingGradSpec s;
    s.tokens = T;
    s.vocab = V;
    s.hidden = H;
    EXPECT_THROW(ops::embedding_backward(spec, s), InputError) << T << " " << V << " " << H;
  }
}

// ---------------------------------------------------------------- timing

// Closed-form bounds of a norm backward (ns). `before`: the bound this test held the previous
// kernel to (ScalarE's four passes over each element; five fp32 two-input passes on VectorE and
// GpSimd together, one more for LayerNorm's dbeta add, one for the dres add), printed beside
// the present one for comparison. `now`: the largest of
//   - the HBM traffic: x, dy (dres) in, dx out;
//   - TensorE's dgamma, an fp32 matmul over every column of every tile (four cycles a column;
//     LayerNorm's dbeta one more, bf16);
//   - ScalarE's two reductions per element (RMSNorm: the squares and g x; LayerNorm: g (x - mean)
//     and g), which only it makes;
//   - VectorE's own cycles per element: dx, one (a source in PSUM; LayerNorm: also bn_stats,
//     one, and P = (x - mean) dy, two);
//   - the cycles every element needs at their cheapest, spread over ScalarE, VectorE and
//     GpSimd at their clocks (where VectorE and GpSimd share an SBUF port, NC-v2, only one of
//     them at a time): ScalarE's two reductions, rstd dy and -k x, one each; VectorE's P
//     (LayerNorm: two, and bn_stats and G, one each), G', dx, one each; B = P gamma (and the
//     dres add), two. The kernel may move work between engines (dx as one VectorE
//     scalar_tensor_tensor, P, G or G' on GpSimd from SBUF), never for fewer cycles;
//   - on NC-v2 the VectorE and GpSimd work at its cheapest, one after the other (3 cycles
//     (LayerNorm 6) on VectorE, B (and the dres add) on GpSimd).
struct NormBounds {
  double before = 0, hbm = 0, pe = 0, act = 0, vector = 0, pooled = 0, serial = 0;
  double now() const { return std::max({hbm, pe, act, vector, pooled, serial}); }
};

NormBounds norm_bounds(const arch::ChipSpec& spec, const ops::NormGradSpec& s) {
  const bool layer = s.norm == Norm::kLayer;
  const int res = s.residual ? 1 : 0;
  const double elements = static_cast<double>(s.tokens * s.features);
  const double per_partition = elements / spec.core.sbuf.partitions;
  const auto& c = spec.core;
  NormBounds b;
  b.hbm =
      s.dtype.storage_bytes * elements * ((2 + res) / dma_gbps(spec) + 1 / dma_write_gbps(spec));
  b.before = std::max({b.hbm, one_input_ns(spec, c.scalar, 4, elements),
                       two_input_ns(spec, 5 + (layer ? 1 : 0) + res, elements)});
  const double tiles = std::ceil(static_cast<double>(s.tokens) / c.sbuf.partitions);
  b.pe = (layer ? 5 : 4) * tiles * static_cast<double>(s.features) / c.tensor.clock_ghz;
  b.act = one_input_ns(spec, c.scalar, 2, elements);
  b.vector = (layer ? 4 : 1) * per_partition / c.vector.clock_ghz;
  const double cycles = (layer ? 12 : 9) + 2 * res;
  const bool shared = c.ports.vector_gpsimd_sbuf_conflict;
  const double rate =
      c.scalar.clock_ghz + (shared ? std::max(c.vector.clock_ghz, c.gpsimd.clock_ghz)
                                   : c.vector.clock_ghz + c.gpsimd.clock_ghz);
  b.pooled = cycles * per_partition / rate;
  if (shared)
    b.serial = per_partition *
               ((layer ? 6 : 3) / c.vector.clock_ghz + 2.0 * (1 + res) / c.gpsimd.clock_ghz);
  return b;
}

// RMSNorm backward, 1024 x 2048, against norm_bounds; within 2x.
TEST_P(TrainRowOpsTest, NormBackwardTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::NormGradSpec s;
  s.tokens = 1024;
  s.features = 2048;
  const NormBounds b = norm_bounds(spec, s);
  const double ns = run_ns(spec, ops::norm_backward(spec, s));
  char serial[64] = "";
  if (b.serial > 0)
    std::snprintf(serial, sizeof serial, ", VectorE then GpSimd %.1f us", b.serial * 1e-3);
  std::printf(
      "%s norm_backward rms 1024x2048: %.1f us; bounds: HBM %.1f us, TensorE %.1f us, ScalarE "
      "%.1f us, VectorE %.1f us, pooled %.1f us%s; ratio %.2f (to the previous bound %.1f us: "
      "%.2f)\n",
      GetParam().c_str(), ns * 1e-3, b.hbm * 1e-3, b.pe * 1e-3, b.act * 1e-3, b.vector * 1e-3,
      b.pooled * 1e-3, serial, ns / b.now(), b.before * 1e-3, ns / b.before);
  EXPECT_GE(ns, b.now());
  EXPECT_LE(ns, 2 * b.now());
}

// Wide rows (norm_backward.cc: column chunks, the tiles overlapping as far as SBUF holds their
// rows): RMSNorm and LayerNorm, with and without dres, at 1024 x 2048 to 4096 x 8192 (a 70B
// model's hidden size), against norm_bounds (printed with the previous bound) and without
// spills; within 2x of the bound.
TEST_P(TrainRowOpsTest, NormBackwardWideTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const auto& [T, F] : std::vector<std::pair<int64_t, int64_t>>{
           {1024, 2048}, {1024, 4096}, {1024, 8192}, {4096, 8192}})
    for (const Norm n : {Norm::kRms, Norm::kLayer})
      for (const bool residual : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << ops::name(n) << " " << T << " x " << F << " residual " << residual);
        ops::NormGradSpec s;
        s.tokens = T;
        s.features = F;
        s.norm = n;
        s.residual = residual;
        const NormBounds b = norm_bounds(spec, s);
        const isa::Program p = ops::norm_backward(spec, s);
        EXPECT_EQ(p.spill.tiles, 0);
        const double ns = run_ns(spec, p);
        std::printf(
            "%s norm_backward %s%s %lldx%lld: %.1f us; bound %.1f us, ratio %.2f; "
            "previous bound %.1f us, ratio %.2f\n",
            GetParam().c_str(), std::string(ops::name(n)).c_str(), residual ? " + dres" : "",
            static_cast<long long>(T), static_cast<long long>(F), ns * 1e-3, b.now() * 1e-3,
            ns / b.now(), b.before * 1e-3, ns / b.before);
        EXPECT_GE(ns, b.now());
        EXPECT_LE(ns, 2 * b.now());
      }
}

// Up to 16384 features (rows of 32 KiB in bf16, gamma 64 KiB in fp32) the kernel fits SBUF
// without spilling on every generation.
TEST_P(TrainRowOpsTest, NormBackwardWideRowsDoNotSpill) {
  const arch::ChipSpec& spec = chip(GetParam());
  for (const int64_t F : {int64_t{8192}, int64_t{12288}, int64_t{16384}})
    for (const Norm n : {Norm::kRms, Norm::kLayer})
      for (const bool residual : {false, true}) {
        ops::NormGradSpec s;
        s.tokens = 1024;
        s.features = F;
        s.norm = n;
        s.residual = residual;
        EXPECT_EQ(ops::norm_backward(spec, s).spill.tiles, 0)
            << ops::name(n) << " features " << F << " residual " << residual;
      }
}

// SwiGLU backward, 1024 x 2048: the HBM traffic (gate, up, dy in, dgate, dup out, bf16) or
// the three fp32 products on VectorE and GpSimd; within 2x of the larger.
TEST_P(TrainRowOpsTest, ActBackwardTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::ActGradSpec s;
  s.tokens = 1024;
  s.features = 2048;
  s.act = Act::kGluSilu;
  const double elements = static_cast<double>(s.tokens * s.features);
  const double hbm = 2 * elements * (3 / dma_gbps(spec) + 2 / dma_write_gbps(spec));
  const double two = two_input_ns(spec, 3, elements);
  const double bound = std::max(hbm, two);
  const double ns = run_ns(spec, ops::act_backward(spec, s));
  std::printf(
      "%s act_backward swiglu 1024x2048: %.1f us; bounds: HBM %.1f us, VectorE + GpSimd "
      "%.1f us; ratio %.2f\n",
      GetParam().c_str(), ns * 1e-3, hbm * 1e-3, two * 1e-3, ns / bound);
  EXPECT_GE(ns, bound);
  EXPECT_LE(ns, 2 * bound);
}

// Embedding backward, 1024 tokens, vocab 4096, hidden 1024: the bytes (zeroing dtable, dy, the
// gathered and scattered fp32 rows) over the DMA rates, or the chain each tile's gather waits
// on (the previous scatter): per tile two transfers, each its fixed overhead and its rows;
// within 2x of the larger (the kernel pays both: the first gather waits for the zeroing).
TEST_P(TrainRowOpsTest, EmbeddingBackwardTiming) {
  const arch::ChipSpec& spec = chip(GetParam());
  ops::EmbeddingGradSpec s;
  s.tokens = 1024;
  s.vocab = 4096;
  s.hidden = 1024;
  const double T = static_cast<double>(s.tokens), H = static_cast<double>(s.hidden);
  const double rows_bytes = T * H * 4;  // fp32 rows, gathered and again scattered
  // The zeroed [vocab, H] fp32 table written, dy read; the rows read and written back.
  const double rows_ns =
      rows_bytes / dma_gbps(spec, true) + rows_bytes / dma_write_gbps(spec, true);
  const double bytes_ns = static_cast<double>(s.vocab) * H * 4 / dma_write_gbps(spec) +
                          T * H * 2 / dma_gbps(spec) + rows_ns;
  const double tiles = T / spec.core.sbuf.partitions;
  const double chain_ns = tiles * 2 * spec.core.dma.fixed_overhead_ns + rows_ns;
  const double bound = std::max(bytes_ns, chain_ns);
  const double ns = run_ns(spec, ops::embedding_backward(spec, s));
  std::printf(
      "%s embedding_backward 1024 tokens, 4096 x 1024: %.1f us; bytes bound %.1f us, "
      "gather/scatter chain %.1f us; ratio %.2f\n",
      GetParam().c_str(), ns * 1e-3, bytes_ns * 1e-3, chain_ns * 1e-3, ns / bound);
  EXPECT_GE(ns, bound);
  EXPECT_LE(ns, 2 * bound);
}

INSTANTIATE_TEST_SUITE_P(Generations, TrainRowOpsTest, ::testing::ValuesIn(kGenerations));

}  // namespace
}  // namespace trnsim::kernel_test
