#include "core/exec/matmul_common.h"

#include <fmt/format.h>

#include <algorithm>

namespace trnsim::core {

bool is_fp32_class(const num::Format& f) {
  return f.dtype == num::Dtype::kFp32 || f.dtype == num::Dtype::kTf32;
}

bool is_mx_only(const num::Format& f) {
  return f.dtype == num::Dtype::kFp4E2M1 || f.dtype == num::Dtype::kE8M0;
}

bool check_pe_tile(ExecContext& ctx) {
  const auto& t = ctx.core().tensor;
  const auto& p = ctx.p;
  auto allowed = [](const std::vector<int>& sizes, int s) {
    return sizes.empty() || std::find(sizes.begin(), sizes.end(), s) != sizes.end();
  };
  if (!allowed(t.row_tile_sizes, p.tile_rows) || !allowed(t.col_tile_sizes, p.tile_cols))
    return ctx.fault(
        mem::FaultKind::kShape,
        fmt::format("PE tile size {}x{} is not one this core has", p.tile_rows, p.tile_cols));
  if (p.tile_row < 0 || p.tile_col < 0 || p.tile_row % 32 != 0 || p.tile_col % 32 != 0 ||
      p.tile_row + p.tile_rows > t.pe_rows || p.tile_col + p.tile_cols > t.pe_cols)
    return ctx.fault(
        mem::FaultKind::kShape,
        fmt::format("PE tile at ({}, {}) of size {}x{} does not fit the {}x{} array "
                    "at a multiple of 32",
                    p.tile_row, p.tile_col, p.tile_rows, p.tile_cols, t.pe_rows, t.pe_cols));
  return true;
}

bool check_psum_dst(ExecContext& ctx, int64_t m, int64_t n) {
  const num::Format& f = ctx.dtype(0);
  const auto& lim = ctx.core().tensor.limits;
  const bool bf16 = f.dtype == num::Dtype::kBf16;
  if (f.dtype != num::Dtype::kFp32 && !(bf16 && ctx.core().features.bf16_psum))
    return ctx.fault_at(mem::FaultKind::kDtype, 0,
                        fmt::format("a matmul writes fp32{} to psum, not {}",
                                    ctx.core().features.bf16_psum ? " or bf16" : "", f.name()));
  if (!ctx.shape_is(0, m, n)) return false;
  const int64_t n_max =
      bf16 ? lim.n_max_bf16_psum.value_or(lim.n_max_fp32_psum) : lim.n_max_fp32_psum;
  if (n_max > 0 && n > n_max)
    return ctx.fault_at(mem::FaultKind::kShape, 0,
                        fmt::format("{} output columns, at most {} for {}", n, n_max, f.name()));
  const int64_t bank = ctx.mem().psum().bank_bytes();
  if (bank > 0 && lim.n_max_fp32_psum * 4 <= bank) {
    const auto r = mem::CoreMemory::byte_range(ctx.ap(0));
    if (r.lo / bank != (r.hi - 1) / bank)
      return ctx.fault_at(
          mem::FaultKind::kShape, 0,
          fmt::format("a matmul output must lie in one psum bank ({} bytes)", bank));
  }
  return true;
}

void write_psum(ExecContext& ctx, mem::Tile& result) {
  const auto acc = ctx.p.acc;
  if (acc == isa::AccumulateFlag::kMiddle || acc == isa::AccumulateFlag::kLast) {
    const mem::Tile& old = ctx.read(0);
    for (int64_t i = 0; i < result.size(); ++i) {
      const auto u = static_cast<size_t>(i);
      result.data[u] = old.data[u] + result.data[u];
    }
  }
  ctx.write(0, result);
}

}  // namespace trnsim::core
