// The norm backward kernel (train_ops.h NormGradSpec): 128 tokens per tile on the partitions,
// fp32 inside. Per tile:
//   front   load x, dy (dres); the statistics recomputed from x as the forward computes them
//           (RMSNorm: ScalarE square-sum and rsqrt; LayerNorm: VectorE bn_stats / bn_aggr);
//           xh = (x - mean) * rstd on ScalarE; G = dy * gamma; B = dy * xh, added to the dgamma
//           accumulator (LayerNorm: dy to the dbeta one); B *= gamma (= g xh).
//   middle  ScalarE sums B into -mean(g xh) (LayerNorm: G into -mean(g)); VectorE
//           xh <- G - xh * mean(g xh) (scalar_tensor_tensor).
//   back    dx = rstd * that (- rstd * mean(g)) on ScalarE (+ dres), rounded once, stored.
// The stages are software-pipelined over the tiles (front of tile i, middle of i-1, back of
// i-2 in one step), since each engine runs its stream in order and every stage waits for the
// one before on another engine; each tile's SBUF is allocated with it and placed by live range,
// so the three tiles in flight have their own bytes (x, dy, dx and three fp32 [128, F] tiles:
// ~42 bytes per feature and partition with gamma and the accumulator: F up to ~4096 fits
// trn2's and trn3's SBUF, ~3500 trn1's; wider rows spill).
// The accumulators are fp32 [rows, F] SBUF tiles, one partial sum per partition (token slot);
// after the last tile a TensorE matmul against a ones column sums them across partitions, 512
// columns (one PSUM bank) at a time, and dgamma (dbeta) are stored fp32.
// The two-input ops either engine may run (tensor_tensor) are split by columns between VectorE
// and GpSimd in the proportion that makes both finish a tile together, given VectorE's own
// work (scalar_tensor_tensor, bn_stats); ScalarE takes the one-input passes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

namespace {

using isa::AluOp;
using isa::Engine;
using kernel::all;

constexpr int64_t kBnChunk = 512;    // bn_stats takes at most 512 elements per partition
constexpr int64_t kPsumChunk = 512;  // fp32 columns of one PSUM bank

// VectorE's share of the columns of the split ops: VectorE runs `vector_only` cycles per column
// of its own plus its share of `split` cycles per column, GpSimd the rest of `split` (the same
// cost table on GpSimd's clock, core/cost/cost_gpsimd.cc); both finish together. Where the two
// share one SBUF port (NC-v2) nothing overlaps, and the faster clock takes the split ops.
double vector_share(const arch::CoreSpec& core, double vector_only, double split) {
  const double v = core.vector.clock_ghz, g = core.gpsimd.clock_ghz;
  if (core.ports.vector_gpsimd_sbuf_conflict) return v > g ? 1.0 : 0.0;
  return std::clamp((split / g - vector_only / v) / (split / v + split / g), 0.0, 1.0);
}

// dst = in0 op in1 over [p, F] tiles, columns [0, c) on VectorE and [c, F) on GpSimd.
void split_tt(kernel::KernelBuilder& kb, double share, const kernel::Tile& dst,
              const kernel::Tile& in0, const kernel::Tile& in1, AluOp op) {
  const int64_t f = dst.size(1);
  const int64_t c = std::clamp<int64_t>(std::llround(share * static_cast<double>(f)), 0, f);
  if (c > 0) kb.tensor_tensor(dst(all, {0, c}), in0(all, {0, c}), in1(all, {0, c}), op);
  if (c < f)
    kb.tensor_tensor(dst(all, {c, f}), in0(all, {c, f}), in1(all, {c, f}), op, Engine::kGpSimd);
}

// out[F] (HBM, fp32) = sum over the partitions of acc [rows, F]: ones^T @ acc on TensorE,
// 512 columns per matmul, each PSUM result copied out by ScalarE into one [1, F] row.
void sum_partitions(kernel::KernelBuilder& kb, const kernel::Tile& acc, const kernel::Tile& ones,
                    const kernel::Tensor& out, const std::string& name) {
  const int64_t f = acc.size(1);
  const kernel::Tile row = kb.sbuf(name + "_row", num::fp32(), {1, f});
  const auto ps = kb.psum_buffers(name + "_ps", num::fp32(), {1, kPsumChunk}, 2);
  for (int64_t c0 = 0, i = 0; c0 < f; c0 += kPsumChunk, ++i) {
    const int64_t c1 = std::min(f, c0 + kPsumChunk);
    const kernel::Tile pt = ps[static_cast<size_t>(i % 2)](all, {0, c1 - c0});
    kb.matmul(pt, ones, acc(all, {c0, c1}));
    kb.tensor_copy(row(all, {c0, c1}), pt, Engine::kScalar);
  }
  kb.dma_copy(out.reshape({1, f}), row);
}

}  // namespace

isa::Program norm_backward(const arch::ChipSpec& chip, const NormGradSpec& s) {
  require_range("norm_backward", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("norm_backward", "features", s.features, 1, 65536);
  if (s.norm == Norm::kNone)
    throw InputError("norm_backward", "norm", "a norm backward needs rmsnorm or layernorm");
  if (!(s.eps >= 0.0)) throw InputError("norm_backward", "eps", "must be >= 0");
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, F = s.features;
  const int64_t rows = std::min(parts, T);  // partitions the accumulators use
  const bool layer = s.norm == Norm::kLayer;
  const auto inv_f = 1.0 / static_cast<double>(F);
  // Per column of a tile: VectorE's own scalar_tensor_tensor (2 cycles) and bn_stats (1);
  // the split tensor_tensors at 2 cycles each: dy*xh, the dgamma add, *gamma, g (and the dbeta
  // add, the dres add).
  const double share = vector_share(chip.core, layer ? 3.0 : 2.0,
                                    2.0 * (4 + (layer ? 1 : 0) + (s.residual ? 1 : 0)));

  kernel::KernelBuilder kb(chip);
  const kernel::Tensor x = kb.input("x", s.dtype, {T, F});
  const kernel::Tensor dy = kb.input("dy", s.dtype, {T, F});
  const kernel::Tensor gamma = kb.input("gamma", num::fp32(), {F});
  const kernel::Tensor dres = s.residual ? kb.input("dres", s.dtype, {T, F}) : kernel::Tensor{};
  const kernel::Tensor dx = kb.output("dx", s.dtype, {T, F});
  const kernel::Tensor dgamma = kb.output("dgamma", num::fp32(), {F});
  const kernel::Tensor dbeta = layer ? kb.output("dbeta", num::fp32(), {F}) : kernel::Tensor{};

  const kernel::Tile gam = kb.sbuf("gamma", num::fp32(), {rows, F});
  kb.dma_copy(gam, gamma.broadcast(0, rows));
  const kernel::Tile acc_g = kb.sbuf("dgamma_acc", num::fp32(), {rows, F});
  kb.memset(acc_g, 0.0, Engine::kGpSimd);
  kernel::Tile acc_b;
  if (layer) {
    acc_b = kb.sbuf("dbeta_acc", num::fp32(), {rows, F});
    kb.memset(acc_b, 0.0, Engine::kGpSimd);
  }
  const int64_t chunks = ceil_div(F, kBnChunk);

  // One token tile's views. Columns of st: 0 mean / sum of squares, 1 var, 2 rstd, 3 -mean * rstd,
  // 4 -mean(g xh), 5 -mean(g), 6 -mean(g) * rstd; bn_stats from 8.
  struct Rows {
    int64_t r0 = 0, p = 0;
    kernel::Tile xt, dyt, drt, xh, B, G, st;
    kernel::Tile col(int64_t c) const { return st(all, {c, c + 1}); }
  };
  auto tile = [&](const char* name, num::Format f, int64_t p) {
    return kb.sbuf(name, f, {parts, F})({0, p});
  };
  // Loads; the statistics (rstd, -mean * rstd) and xh; G = dy * gamma, the accumulators, and
  // B = g xh. Of ScalarE's square sums and row sums only the fp32 reduction is used: the
  // elementwise results go to tiles whose old values nothing needs (B before its first use,
  // B after its last).
  auto front = [&](int64_t i) {
    Rows t;
    t.r0 = i * parts;
    t.p = std::min(parts, T - t.r0);
    t.xt = tile("x", s.dtype, t.p);
    t.dyt = tile("dy", s.dtype, t.p);
    kb.dma_copy(t.xt, x({t.r0, t.r0 + t.p}));
    kb.dma_copy(t.dyt, dy({t.r0, t.r0 + t.p}));
    if (s.residual) {
      t.drt = tile("dres", s.dtype, t.p);
      kb.dma_copy(t.drt, dres({t.r0, t.r0 + t.p}));
    }
    t.xh = tile("xh", num::fp32(), t.p);
    t.B = tile("prod", num::fp32(), t.p);
    t.G = tile("g", num::fp32(), t.p);
    t.st = kb.sbuf("stats", num::fp32(), {parts, 8 + 6 * chunks})({0, t.p});
    const kernel::Tile rstd = t.col(2);
    if (layer) {
      const kernel::Tile bn = t.st(all, {8, 8 + 6 * chunks});
      for (int64_t c = 0; c < chunks; ++c)
        kb.bn_stats(bn(all, {c * 6, c * 6 + 6}),
                    t.xt(all, {c * kBnChunk, std::min(F, (c + 1) * kBnChunk)}));
      kb.bn_aggr(t.st(all, {0, 2}), bn);
      kb.tensor_scalar(rstd, t.col(1), {AluOp::kAdd, s.eps}, {AluOp::kPow, -0.5f});
      kb.tensor_scalar(t.col(3), t.col(0), {AluOp::kMult, rstd}, {AluOp::kMult, -1.0f});
      kb.activation(t.xh, t.xt, isa::ActFunc::kCopy, rstd, t.col(3));
    } else {
      kb.activation_reduce(t.B, t.col(0), t.xt, isa::ActFunc::kSquare);
      kb.activation(rstd, t.col(0), isa::ActFunc::kRsqrt, inv_f, s.eps);
      kb.activation(t.xh, t.xt, isa::ActFunc::kCopy, rstd);
    }
    const kernel::Tile gm = gam({0, t.p}), ag = acc_g({0, t.p});
    split_tt(kb, share, t.G, t.dyt, gm, AluOp::kMult);
    if (layer) split_tt(kb, share, acc_b({0, t.p}), acc_b({0, t.p}), t.dyt, AluOp::kAdd);
    split_tt(kb, share, t.B, t.dyt, t.xh, AluOp::kMult);
    split_tt(kb, share, ag, ag, t.B, AluOp::kAdd);
    split_tt(kb, share, t.B, t.B, gm, AluOp::kMult);
    return t;
  };
  // -mean(g xh) (and -mean(g)) summed by ScalarE; xh <- g - xh * mean(g xh) on VectorE.
  auto middle = [&](const Rows& t) {
    kb.activation_reduce(t.B, t.col(4), t.B, isa::ActFunc::kCopy, -inv_f);
    if (layer) {
      kb.activation_reduce(t.B, t.col(5), t.G, isa::ActFunc::kCopy, -inv_f);
      kb.tensor_scalar(t.col(6), t.col(5), {AluOp::kMult, t.col(2)}, {}, Engine::kScalar);
    }
    kb.scalar_tensor_tensor(t.xh, t.xh, {AluOp::kMult, t.col(4)}, AluOp::kAdd, t.G);
  };
  // dx = rstd * that (- rstd * mean(g)) (+ dres), rounded once, stored.
  auto back = [&](const Rows& t) {
    const kernel::Scalar bias = layer ? kernel::Scalar(t.col(6)) : kernel::Scalar(0.0f);
    const kernel::Tile dxt = tile("dx", s.dtype, t.p);
    if (s.residual) {
      kb.activation(t.xh, t.xh, isa::ActFunc::kCopy, t.col(2), bias);
      split_tt(kb, share, dxt, t.xh, t.drt, AluOp::kAdd);
    } else {
      kb.activation(dxt, t.xh, isa::ActFunc::kCopy, t.col(2), bias);
    }
    kb.dma_copy(dx({t.r0, t.r0 + t.p}), dxt);
  };
  // The pipeline: in step i ScalarE makes tile i's statistics and xh, then tile i-1's sums
  // (whose products VectorE and GpSimd made in step i-1), then tile i-2's dx (combined by
  // VectorE in step i-1); VectorE and GpSimd make tile i's products, then VectorE combines
  // tile i-1. So no engine waits for an instruction emitted after its own in the same step.
  const int64_t tiles = ceil_div(T, parts);
  std::vector<Rows> rows_of(static_cast<size_t>(tiles));
  for (int64_t i = 0; i < tiles + 2; ++i) {
    if (i < tiles) rows_of[static_cast<size_t>(i)] = front(i);
    if (i >= 1 && i - 1 < tiles) middle(rows_of[static_cast<size_t>(i - 1)]);
    if (i >= 2) back(rows_of[static_cast<size_t>(i - 2)]);
  }

  const kernel::Tile ones = kb.sbuf("ones", num::fp32(), {rows, 1});
  kb.memset(ones, 1.0);
  sum_partitions(kb, acc_g, ones, dgamma, "dgamma");
  if (layer) sum_partitions(kb, acc_b, ones, dbeta, "dbeta");
  return kb.build();
}

}  // namespace trnsim::ops
