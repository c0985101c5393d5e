#include "ops/rows.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "isa/instruction.h"

namespace trnsim::ops {

namespace {
constexpr int64_t kBnChunk = 512;  // bn_stats takes at most 512 elements per partition
}  // namespace

NormParams load_norm_params(kernel::KernelBuilder& kb, Norm norm, const std::string& prefix,
                            int64_t features) {
  NormParams p;
  if (norm == Norm::kNone) return p;
  const int64_t parts = kb.core().sbuf.partitions;
  const kernel::Tensor gamma = kb.input(prefix + "gamma", num::fp32(), {features});
  p.gamma = kb.sbuf(prefix + "gamma", num::fp32(), {parts, features});
  kb.dma_copy(p.gamma, gamma.broadcast(0, parts));
  if (norm == Norm::kLayer) {
    const kernel::Tensor beta = kb.input(prefix + "beta", num::fp32(), {features});
    p.beta = kb.sbuf(prefix + "beta", num::fp32(), {parts, features});
    kb.dma_copy(p.beta, beta.broadcast(0, parts));
  }
  return p;
}

NormScratch norm_scratch(kernel::KernelBuilder& kb, const std::string& name, int64_t features,
                         Norm norm) {
  const int64_t parts = kb.core().sbuf.partitions;
  NormScratch s;
  if (norm == Norm::kLayer) s.wide = kb.sbuf(name + "_wide", num::fp32(), {parts, features});
  s.stats = kb.sbuf(name + "_stats", num::fp32(), {parts, 8 + 6 * ceil_div(features, kBnChunk)});
  return s;
}

void normalize_rows(kernel::KernelBuilder& kb, Norm norm, double eps, const kernel::Tile& dst,
                    const kernel::Tile& src, const NormParams& params, const NormScratch& scratch,
                    int64_t p) {
  using isa::AluOp;
  using kernel::all;
  const int64_t f = src.size(1);
  const kernel::Tile st = scratch.stats({0, p});
  auto col = [&](int64_t c) { return st(all, {c, c + 1}); };
  if (norm == Norm::kRms) {
    // The squares go to dst (only their fp32 sum is kept), which the last step overwrites.
    kb.activation_reduce(dst, col(0), src, isa::ActFunc::kSquare);
    kb.activation(col(1), col(0), isa::ActFunc::kRsqrt, 1.0 / static_cast<double>(f), eps);
    kb.scalar_tensor_tensor(dst, src, {AluOp::kMult, col(1)}, AluOp::kMult, params.gamma({0, p}));
    return;
  }
  // Layer norm: mean and population variance from bn_stats over chunks, then bn_aggr.
  const kernel::Tile wide = scratch.wide({0, p});
  const int64_t chunks = ceil_div(f, kBnChunk);
  const kernel::Tile bn = st(all, {8, 8 + 6 * chunks});
  for (int64_t c = 0; c < chunks; ++c)
    kb.bn_stats(bn(all, {c * 6, c * 6 + 6}),
                src(all, {c * kBnChunk, std::min(f, (c + 1) * kBnChunk)}));
  kb.bn_aggr(st(all, {0, 2}), bn);
  kb.tensor_scalar(col(2), col(1), {AluOp::kAdd, eps}, {AluOp::kPow, -0.5f});
  kb.tensor_scalar(wide, src, {AluOp::kSubtract, col(0)}, {AluOp::kMult, col(2)});
  kb.tensor_tensor(wide, wide, params.gamma({0, p}), AluOp::kMult);
  kb.tensor_tensor(dst, wide, params.beta({0, p}), AluOp::kAdd);
}

ColumnNorm load_column_norm(kernel::KernelBuilder& kb, Norm norm, int64_t features,
                            int64_t tokens) {
  ColumnNorm c;
  if (norm == Norm::kNone) return c;
  const int64_t parts = kb.core().sbuf.partitions, kt = features / parts;
  auto param = [&](const std::string& name) {
    const kernel::Tensor in = kb.input(name, num::fp32(), {features});
    kernel::Tile t = kb.sbuf(name + "_cols", num::fp32(), {parts, kt});
    kb.dma_copy(t, in.pattern(0, {{parts, kt}, {kt, 1}}));
    return t;
  };
  c.gamma = param("gamma");
  if (norm == Norm::kLayer) c.beta = param("beta");
  c.ones = kb.sbuf("norm_ones", num::fp32(), {parts, parts});
  kb.memset(c.ones, 1.0, isa::Engine::kGpSimd);
  c.sq = kb.sbuf("norm_sq", num::fp32(), {parts, tokens, kt});
  if (norm == Norm::kLayer) c.dev = kb.sbuf("norm_dev", num::fp32(), {parts, tokens, kt});
  c.stats = kb.sbuf("norm_stats", num::fp32(), {parts, 6 * tokens});
  c.sums = kb.psum("norm_sums", num::fp32(), {parts, 2 * tokens});
  return c;
}

void normalize_columns(kernel::KernelBuilder& kb, Norm norm, double eps, const kernel::Tile& dst,
                       const kernel::Tile& src, const ColumnNorm& c) {
  using isa::AluOp;
  using kernel::all;
  const int64_t parts = src.size(0), T = src.size(1), kt = src.size(2);
  const double inv_f = 1.0 / static_cast<double>(parts * kt);
  auto stat = [&](int64_t i) { return c.stats(all, {i * T, (i + 1) * T}); };
  const kernel::Tile gamma = c.gamma.broadcast(1, T);
  if (norm == Norm::kRms) {
    kb.tensor_tensor(c.sq, src, src, AluOp::kMult);
    kb.tensor_reduce(stat(0), c.sq, AluOp::kAdd);
    kb.matmul(c.sums(all, {0, T}), c.ones, stat(0));
    kb.activation(stat(4), c.sums(all, {0, T}), isa::ActFunc::kRsqrt, inv_f, eps);
    kb.tensor_tensor(c.sq, src, stat(4).broadcast(2, kt), AluOp::kMult);
    kb.tensor_tensor(dst, c.sq, gamma, AluOp::kMult);
    return;
  }
  // Layer norm in two passes, as bn_stats / bn_aggr avoid E[x^2] - mean^2: the mean from the
  // sums of x, then the variance from the sums of (x - mean)^2; each total one matmul.
  kb.tensor_reduce(stat(0), src, AluOp::kAdd);
  kb.matmul(c.sums(all, {0, T}), c.ones, stat(0));
  kb.tensor_scalar(stat(2), c.sums(all, {0, T}), {AluOp::kMult, inv_f});
  kb.tensor_tensor(c.sq, src, stat(2).broadcast(2, kt), AluOp::kSubtract);
  kb.tensor_tensor(c.dev, c.sq, c.sq, AluOp::kMult);
  kb.tensor_reduce(stat(1), c.dev, AluOp::kAdd);
  kb.matmul(c.sums(all, {T, 2 * T}), c.ones, stat(1));
  kb.tensor_scalar(stat(4), c.sums(all, {T, 2 * T}), {AluOp::kMult, inv_f}, {AluOp::kAdd, eps});
  kb.tensor_scalar(stat(4), stat(4), {AluOp::kPow, -0.5f});
  kb.tensor_tensor(c.sq, c.sq, stat(4).broadcast(2, kt), AluOp::kMult);
  kb.tensor_tensor(c.sq, c.sq, gamma, AluOp::kMult);
  kb.tensor_tensor(dst, c.sq, c.beta.broadcast(1, T), AluOp::kAdd);
}

void require_range(std::string_view op, std::string_view arg, int64_t value, int64_t lo,
                   int64_t hi) {
  if (value < lo || value > hi)
    throw InputError(std::string(op), std::string(arg),
                     fmt::format("{} is outside [{}, {}]", value, lo, hi));
}

void rope_rotate(kernel::KernelBuilder& kb, const kernel::Tile& dst, const kernel::Tile& src,
                 const kernel::Tile& c, const kernel::Tile& sn, const kernel::Tile& rf,
                 const kernel::Tile& tmp, isa::Engine e) {
  using isa::AluOp;
  using kernel::all;
  const int64_t d = src.size(2), half = d / 2;
  const kernel::Idx lo{0, half}, hi{half, d};
  const kernel::Tile t = tmp(all, all, lo);
  kb.tensor_tensor(rf, src, c, AluOp::kMult, e);
  kb.tensor_tensor(t, src(all, all, hi), sn(all, all, lo), AluOp::kMult, e);
  kb.tensor_tensor(dst(all, all, lo), rf(all, all, lo), t, AluOp::kSubtract, e);
  kb.tensor_tensor(t, src(all, all, lo), sn(all, all, hi), AluOp::kMult, e);
  kb.tensor_tensor(dst(all, all, hi), rf(all, all, hi), t, AluOp::kAdd, e);
}

void rope_rotate_back(kernel::KernelBuilder& kb, const kernel::Tile& dst, const kernel::Tile& g,
                      const kernel::Tile& c, const kernel::Tile& sn, const kernel::Tile& a,
                      const kernel::Tile& u, isa::Engine e) {
  using isa::AluOp;
  using kernel::all;
  const int64_t d = g.size(2), half = d / 2;
  const kernel::Idx lo{0, half}, hi{half, d};
  kb.tensor_tensor(a, g, c, AluOp::kMult, e);
  kb.tensor_tensor(u, g, sn, AluOp::kMult, e);
  kb.tensor_tensor(dst(all, all, lo), a(all, all, lo), u(all, all, hi), AluOp::kAdd, e);
  kb.tensor_tensor(dst(all, all, hi), a(all, all, hi), u(all, all, lo), AluOp::kSubtract, e);
}

}  // namespace trnsim::ops
