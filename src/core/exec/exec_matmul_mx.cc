// NC-v4 MX matmul with fused dequantisation (HARDWARE.md s2.1, s5): stationary [P, 4M] and
// moving [P, 4N] of MXFP8 (e4m3fn / e5m2) or MXFP4 (e2m1) elements, 4 consecutive free
// elements packed per column, so K = 4P with k = 4p + j. Each element is dequantised to FP32
// as value * 2^(scale - 127) (exact except where the product leaves the FP32 range), and the
// product matrix is accumulated exactly like a plain matmul (matmul_kernel.h), k ascending.
// The instruction carries its own stationary: it neither uses nor disturbs load_stationary.
#include <fmt/format.h>

#include <array>

#include "core/exec/matmul_common.h"
#include "core/exec/matmul_kernel.h"
#include "core/exec/mx_layout.h"
#include "core/exec/semantics.h"
#include "numerics/convert.h"

namespace trnsim::core {

namespace {

bool is_mx_elem(const num::Format& f) {
  return f.dtype == num::Dtype::kFp8E4M3Fn || f.dtype == num::Dtype::kFp8E5M2 ||
         f.dtype == num::Dtype::kFp4E2M1;
}
bool is_scale(const num::Format& f) {
  return f.dtype == num::Dtype::kE8M0 || f.dtype == num::Dtype::kUint8;
}

bool check_operand(ExecContext& ctx, int data, int scale, int64_t partitions) {
  if (!is_mx_elem(ctx.dtype(data)))
    return ctx.fault_at(mem::FaultKind::kDtype, data,
                        fmt::format("{} is not an MX element type (fp8_e4m3fn, fp8_e5m2, fp4_e2m1)",
                                    ctx.dtype(data).name()));
  if (ctx.rows(data) != partitions || ctx.cols(data) % kMxPack != 0)
    return ctx.fault_at(mem::FaultKind::kShape, data,
                        fmt::format("must be [{}, 4 x columns]", partitions));
  if (!is_scale(ctx.dtype(scale)))
    return ctx.fault_at(mem::FaultKind::kDtype, scale, "MX scales are e8m0 or uint8");
  if (ctx.rows(scale) < mx_scale_rows(partitions) || ctx.cols(scale) != ctx.cols(data) / kMxPack)
    return ctx.fault_at(mem::FaultKind::kShape, scale,
                        fmt::format("scales must be [>= {}, {}]", mx_scale_rows(partitions),
                                    ctx.cols(data) / kMxPack));
  return true;
}

// [K = 4P][C] FP32 matrix of a dequantised operand.
void dequantize(ExecContext& ctx, int data, int scale, float* out) {
  const num::Format& f = ctx.dtype(data);
  std::array<double, 256> table;
  for (unsigned c = 0; c < 256; ++c) table[c] = num::decode(f, c);
  const std::vector<uint8_t>& e = ctx.codes(data, 0);
  const std::vector<uint8_t>& s = ctx.codes(scale, 1);
  const int64_t p_count = ctx.rows(data), cols = ctx.cols(data) / kMxPack;
  const int64_t scale_cols = ctx.cols(scale);
  for (int64_t p = 0; p < p_count; ++p)
    for (int64_t c = 0; c < cols; ++c) {
      const double factor =
          mx_scale_factor(s[static_cast<size_t>(mx_scale_row(p) * scale_cols + c)]);
      for (int64_t j = 0; j < kMxPack; ++j) {
        const uint8_t code = e[static_cast<size_t>(p * cols * kMxPack + c * kMxPack + j)];
        out[(p * kMxPack + j) * cols + c] = static_cast<float>(table[code] * factor);
      }
    }
}

}  // namespace

void exec_matmul_mx(ExecContext& ctx) {
  if (!ctx.core().features.mx_matmul)
    return static_cast<void>(ctx.fault(mem::FaultKind::kUnsupported, "MX matmul needs NC-v4"));
  if (!check_pe_tile(ctx)) return;
  const int64_t parts = ctx.rows(1);
  if (ctx.p.tile_cols != ctx.core().tensor.pe_cols || parts > ctx.p.tile_rows || parts % 32 != 0)
    return static_cast<void>(ctx.fault(
        mem::FaultKind::kShape,
        "MX matmul allows row tiling only, with a multiple of 32 partitions within the tile"));
  if (!check_operand(ctx, 1, 3, parts) || !check_operand(ctx, 2, 4, parts)) return;
  const int64_t k = parts * kMxPack, m = ctx.cols(1) / kMxPack, n = ctx.cols(2) / kMxPack;
  const auto& lim = ctx.core().tensor.limits;
  if (lim.mx_n_max && n > *lim.mx_n_max)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 2, fmt::format("N {} above {}", n, *lim.mx_n_max)));
  if (!check_psum_dst(ctx, m, n)) return;

  mem::Tile& w = ctx.temp(1, k, m);
  mem::Tile& x = ctx.temp(3, k, n);
  dequantize(ctx, 1, 3, w.data.data());
  dequantize(ctx, 2, 4, x.data.data());
  mem::Tile& out = ctx.temp(0, m, n);
  matmul_fp32(w.data.data(), x.data.data(), k, m, n, out.data.data());
  write_psum(ctx, out);
}

}  // namespace trnsim::core
