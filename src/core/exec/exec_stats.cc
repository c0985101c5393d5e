// Normalisation statistics and top-8 search of the VectorE. The hardware's arithmetic order
// is not public (HARDWARE.md s11); trnsim's, in FP32 with one rounding per step:
//   bn_stats, per partition and per parity class (even / odd element index in pattern order):
//     count c; sum = x0 + x1 + ... (sequential); mean = sum / c;
//     m2 = sum of (x - mean) * (x - mean) (sequential)   -> [c_e, mean_e, m2_e, c_o, mean_o, m2_o]
//     (a class with no element gives 0, 0, 0)
//   bn_aggr over triples (c_j, mean_j, m2_j) of the source row, j = 0, 1, ...:
//     n = sum c_j; mean = (sum c_j * mean_j) / n;
//     var = (sum (m2_j + c_j * (mean_j - mean)^2)) / n   (population variance) -> [mean, var]
//   max8: the 8 largest values in descending order; NaN ranks above +inf, +0 above -0.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/exec/semantics.h"

namespace trnsim::core {

namespace {

constexpr int64_t kBnStatsFmax = 512;  // KLR bn_stats_fmax, HARDWARE.md s2.3

void stats_class(const float* x, int64_t n, int64_t first, float* out) {
  const int64_t c = n > first ? (n - first + 1) / 2 : 0;
  if (c == 0) {
    out[0] = out[1] = out[2] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int64_t i = first; i < n; i += 2) sum = sum + x[i];
  const float mean = sum / static_cast<float>(c);
  float m2 = 0.0f;
  for (int64_t i = first; i < n; i += 2) {
    const float d = x[i] - mean;
    const float sq = d * d;
    m2 = m2 + sq;
  }
  out[0] = static_cast<float>(c);
  out[1] = mean;
  out[2] = m2;
}

// Sort key: NaN above everything, then IEEE total order (+0 above -0).
bool ranks_above(float a, float b) {
  if (std::isnan(b)) return false;
  if (std::isnan(a)) return true;
  if (a == b) return !std::signbit(a) && std::signbit(b);
  return a > b;
}

}  // namespace

void exec_bn_stats(ExecContext& ctx) {
  if (ctx.cols(1) > kBnStatsFmax) {
    ctx.fault_at(mem::FaultKind::kShape, 1,
                 fmt::format("bn_stats takes at most {} elements per partition, got {}",
                             kBnStatsFmax, ctx.cols(1)));
    return;
  }
  if (!ctx.shape_is(0, ctx.rows(1), 6)) return;
  const mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, x.rows, 6);
  for (int64_t r = 0; r < x.rows; ++r) {
    stats_class(x.row(r), x.cols, 0, out.row(r));
    stats_class(x.row(r), x.cols, 1, out.row(r) + 3);
  }
  ctx.write(0, out);
}

void exec_bn_aggr(ExecContext& ctx) {
  if (ctx.cols(1) % 3 != 0) {
    ctx.fault_at(mem::FaultKind::kShape, 1,
                 fmt::format("bn_aggr takes (count, mean, m2) triples; {} elements per partition",
                             ctx.cols(1)));
    return;
  }
  if (!ctx.shape_is(0, ctx.rows(1), 2)) return;
  const mem::Tile& s = ctx.read(1);
  mem::Tile& out = ctx.temp(0, s.rows, 2);
  const int64_t groups = s.cols / 3;
  for (int64_t r = 0; r < s.rows; ++r) {
    const float* g = s.row(r);
    float n = 0.0f, weighted = 0.0f;
    for (int64_t j = 0; j < groups; ++j) {
      n = n + g[3 * j];
      const float w = g[3 * j] * g[3 * j + 1];
      weighted = weighted + w;
    }
    const float mean = weighted / n;
    float m2 = 0.0f;
    for (int64_t j = 0; j < groups; ++j) {
      const float d = g[3 * j + 1] - mean;
      const float d2 = d * d;
      const float cd2 = g[3 * j] * d2;
      const float term = g[3 * j + 2] + cd2;
      m2 = m2 + term;
    }
    out.at(r, 0) = mean;
    out.at(r, 1) = m2 / n;
  }
  ctx.write(0, out);
}

void exec_max8(ExecContext& ctx) {
  if (ctx.cols(1) < 8 || ctx.cols(1) > 16384) {
    ctx.fault_at(mem::FaultKind::kShape, 1,
                 fmt::format("max8 takes 8..16384 elements per partition, got {}", ctx.cols(1)));
    return;
  }
  if (!ctx.shape_is(0, ctx.rows(1), 8)) return;
  mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, x.rows, 8);
  for (int64_t r = 0; r < x.rows; ++r) {
    float* row = x.row(r);  // the decoded copy may be reordered
    std::partial_sort(row, row + 8, row + x.cols, ranks_above);
    std::copy(row, row + 8, out.row(r));
  }
  ctx.write(0, out);
}

}  // namespace trnsim::core
