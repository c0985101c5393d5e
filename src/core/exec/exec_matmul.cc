// TensorE matmul: load_stationary caches stationary [K, M] at a PE tile position;
// multiply_moving computes dst[M, N] = stationary^T @ moving[K, N] into PSUM
// (HARDWARE.md s2.1, s2.2). Arithmetic and order: matmul_kernel.h. Double-row FP8 (NC-v3,
// perf_mode double_row): both operands are [128 partitions, 2, F] with the 2 as the outermost
// free dim, and K = 256 runs over the first half's partitions, then the second half's.
#include <fmt/format.h>

#include <cstring>

#include "core/exec/matmul_common.h"
#include "core/exec/matmul_kernel.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

namespace {

bool double_row(const isa::Params& p) { return p.perf_mode == isa::MatmulPerfMode::kDoubleRowFp8; }

// The operand's [K][F] matrix view: K = partitions (x2 for double row), F = free elements (/2).
bool matrix_shape(ExecContext& ctx, int slot, bool dr, int64_t& k, int64_t& f) {
  const isa::AccessPattern& a = ctx.ap(slot);
  if (a.dtype.kind == num::Kind::kInt || is_mx_only(a.dtype))
    return ctx.fault_at(mem::FaultKind::kDtype, slot,
                        fmt::format("{} is not a matmul input dtype", a.dtype.name()));
  if (!dr) {
    k = a.num_partitions;
    f = a.free_elements();
    return true;
  }
  if (!ctx.core().features.double_row_fp8)
    return ctx.fault(mem::FaultKind::kUnsupported, "double-row FP8 matmul is not on this core");
  if (a.dtype.storage_bytes != 1)
    return ctx.fault_at(mem::FaultKind::kDtype, slot, "double-row matmul takes fp8 inputs");
  if (a.ndim < 2 || a.dims[0].size != 2)
    return ctx.fault_at(mem::FaultKind::kShape, slot,
                        "double-row operands are [partitions, 2, F] (outermost free dim 2)");
  k = 2 * int64_t{a.num_partitions};
  f = a.free_elements() / 2;
  return true;
}

// Row-major [K][F] copy of a decoded [P][2F] double-row tile: row k = half * P + p.
void unfold_double_row(const mem::Tile& t, int64_t f, float* out) {
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t p = 0; p < t.rows; ++p)
      std::memcpy(out + (h * t.rows + p) * f, t.row(p) + h * f, static_cast<size_t>(f) * 4);
}

}  // namespace

void exec_load_stationary(ExecContext& ctx) {
  if (!check_pe_tile(ctx)) return;
  const bool dr = double_row(ctx.p);
  int64_t k = 0, m = 0;
  if (!matrix_shape(ctx, 0, dr, k, m)) return;
  if (ctx.rows(0) > ctx.p.tile_rows || m > ctx.p.tile_cols)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 0,
                     fmt::format("stationary [{} partitions, {}] does not fit the {}x{} PE tile",
                                 ctx.rows(0), m, ctx.p.tile_rows, ctx.p.tile_cols)));
  const mem::Tile& t = ctx.read(0);
  StationaryTile& s =
      ctx.pe().slot(ctx.p.tile_row, ctx.p.tile_col, ctx.p.tile_rows, ctx.p.tile_cols);
  s.k = k;
  s.m = m;
  s.dtype = ctx.dtype(0);
  s.double_row = dr;
  s.w.resize(static_cast<size_t>(k * m));
  if (dr)
    unfold_double_row(t, m, s.w.data());
  else
    std::memcpy(s.w.data(), t.data.data(), static_cast<size_t>(k * m) * 4);
}

void exec_multiply_moving(ExecContext& ctx) {
  if (!check_pe_tile(ctx)) return;
  const StationaryTile* s = ctx.pe().at(ctx.p.tile_row, ctx.p.tile_col);
  if (s == nullptr || s->rows != ctx.p.tile_rows || s->cols != ctx.p.tile_cols)
    return static_cast<void>(
        ctx.fault(mem::FaultKind::kNoStationary,
                  fmt::format("no stationary loaded at PE tile ({}, {}) of size {}x{}",
                              ctx.p.tile_row, ctx.p.tile_col, ctx.p.tile_rows, ctx.p.tile_cols)));
  const bool dr = double_row(ctx.p);
  if (dr != s->double_row)
    return static_cast<void>(ctx.fault(
        mem::FaultKind::kShape, "perf_mode differs from the load_stationary that loaded the tile"));
  int64_t k = 0, n = 0;
  if (!matrix_shape(ctx, 1, dr, k, n)) return;
  if (k != s->k)
    return static_cast<void>(ctx.fault_at(
        mem::FaultKind::kShape, 1,
        fmt::format("moving contraction {} differs from the stationary's {}", k, s->k)));
  if (is_fp32_class(ctx.dtype(1)) != is_fp32_class(s->dtype))
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 1,
                     fmt::format("{} moving with {} stationary: fp32/tf32 pair only with fp32/tf32",
                                 ctx.dtype(1).name(), s->dtype.name())));
  if (!check_psum_dst(ctx, s->m, n)) return;

  const mem::Tile& mv = ctx.read(1);
  const float* x = mv.data.data();
  if (dr) {
    mem::Tile& unfolded = ctx.temp(1, k, n);
    unfold_double_row(mv, n, unfolded.data.data());
    x = unfolded.data.data();
  }
  mem::Tile& out = ctx.temp(0, s->m, n);
  matmul_fp32(s->w.data(), x, k, s->m, n, out.data.data());
  write_psum(ctx, out);
}

}  // namespace trnsim::core
