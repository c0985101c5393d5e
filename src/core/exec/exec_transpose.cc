// Transposes. Bit-exact ones move element codes; a TensorE transpose without transpose=true
// (the only kind on NC-v2) goes through the matmul datapath (HARDWARE.md s2.1: a matmul with an
// identity moving matrix), so NaN and Inf spread along the output row (0 x Inf = NaN) and -0
// becomes +0.
//   transpose_pe   src [P, F] -> dst [F, P] in PSUM. With transpose=true (is_transpose, needs
//                  features.bit_exact_transpose, NC-v3+) it is bit-exact: equal element
//                  sizes copy codes, fp8 sources give 16-bit outputs with the upper 8 bits
//                  zero (AG3). Otherwise it is the identity matmul, written like a matmul
//                  result (fp32, or bf16 PSUM where the core has it).
//   transpose_dve  VectorE, within one 32-partition reshape bank: [P <= 32, F <= 32] -> [F, P].
//   dma_transpose  DMA, 2- or 4-byte elements of one dtype, src [R, C] -> dst [C, R],
//                  bit-exact (AG3).
// Equal dtypes copy codes; different dtypes (transpose_dve only) cast through FP32.
#include <fmt/format.h>

#include <cstring>

#include "core/exec/matmul_common.h"
#include "core/exec/matmul_kernel.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

namespace {

// dst[r][c] (of a [rows, cols] result, es bytes each) = src element src_index(r, c).
template <typename Index>
void permute(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, int64_t es,
             Index src_index) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(dst + (r * cols + c) * es, src + src_index(r, c) * es, static_cast<size_t>(es));
}

}  // namespace

void exec_transpose_pe(ExecContext& ctx) {
  const int64_t p = ctx.rows(1), f = ctx.cols(1);
  const auto& t = ctx.core().tensor;
  if (p > t.pe_rows || f > t.pe_cols)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 1,
                     fmt::format("transpose_pe takes at most [{}, {}]", t.pe_rows, t.pe_cols)));
  if (ctx.p.transpose && !ctx.core().features.bit_exact_transpose)
    return static_cast<void>(ctx.fault(
        mem::FaultKind::kUnsupported, "bit-exact transpose (transpose=true) needs NC-v3 or later"));
  if (!ctx.p.transpose) {
    if (ctx.dtype(1).kind == num::Kind::kInt || is_mx_only(ctx.dtype(1)))
      return static_cast<void>(ctx.fault_at(mem::FaultKind::kDtype, 1, "not a matmul input dtype"));
    if (!check_psum_dst(ctx, f, p)) return;
    const mem::Tile& src = ctx.read(1);
    mem::Tile& eye = ctx.temp(1, p, p);
    eye.fill(0.0f);
    for (int64_t i = 0; i < p; ++i) eye.at(i, i) = 1.0f;
    mem::Tile& out = ctx.temp(0, f, p);
    matmul_fp32(src.data.data(), eye.data.data(), p, f, p, out.data.data());
    ctx.write(0, out);
    return;
  }
  if (!ctx.shape_is(0, f, p)) return;
  const int64_t es = ctx.dtype(1).storage_bytes, ed = ctx.dtype(0).storage_bytes;
  if (!(es == ed || (es == 1 && ed == 2)))
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 0,
                     fmt::format("a bit-exact transpose of {} writes {}-byte elements, not {}",
                                 ctx.dtype(1).name(), es == 1 ? 2 : es, ctx.dtype(0).name())));
  const std::vector<uint8_t>& src = ctx.codes(1, 0);
  std::vector<uint8_t>& dst = ctx.buffer(1);
  dst.assign(static_cast<size_t>(f * p * ed), 0);  // zero upper bytes for fp8 -> 16 bit
  for (int64_t r = 0; r < f; ++r)
    for (int64_t c = 0; c < p; ++c)
      std::memcpy(dst.data() + (r * p + c) * ed, src.data() + (c * f + r) * es,
                  static_cast<size_t>(es));
  ctx.write_codes(0, dst.data());
}

void exec_transpose_dve(ExecContext& ctx) {
  const int64_t p = ctx.rows(1), f = ctx.cols(1);
  if (p > 32 || f > 32)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 1,
                     fmt::format("transpose_dve takes at most [32, 32], got [{}, {}]", p, f)));
  if (!ctx.shape_is(0, f, p)) return;
  auto src_index = [&](int64_t r, int64_t c) { return c * f + r; };
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  if (ctx.dtype(0) == ctx.dtype(1)) {
    const int64_t es = ctx.dtype(0).storage_bytes;
    const std::vector<uint8_t>& src = ctx.codes(1, 0);
    std::vector<uint8_t>& dst = ctx.buffer(1);
    dst.resize(static_cast<size_t>(rows * cols * es));
    permute(src.data(), dst.data(), rows, cols, es, src_index);
    ctx.write_codes(0, dst.data());
    return;
  }
  const mem::Tile& src = ctx.read(1);
  mem::Tile& out = ctx.temp(0, rows, cols);
  permute(reinterpret_cast<const uint8_t*>(src.data.data()),
          reinterpret_cast<uint8_t*>(out.data.data()), rows, cols, 4, src_index);
  ctx.write(0, out);
}

void exec_dma_transpose(ExecContext& ctx) {
  if (!ctx.core().dma.transpose)
    return static_cast<void>(
        ctx.fault(mem::FaultKind::kUnsupported, "DMA transpose is not on this core"));
  const int64_t es = ctx.dtype(1).storage_bytes;
  if (ctx.dtype(0) != ctx.dtype(1) || (es != 2 && es != 4))
    return static_cast<void>(ctx.fault_at(
        mem::FaultKind::kDtype, 1, "dma_transpose moves 2- or 4-byte elements of one dtype"));
  const int64_t r = ctx.rows(1), c = ctx.cols(1);
  if (!ctx.shape_is(0, c, r)) return;
  const std::vector<uint8_t>& src = ctx.codes(1, 0);
  std::vector<uint8_t>& dst = ctx.buffer(1);
  dst.resize(src.size());
  permute(src.data(), dst.data(), c, r, es, [&](int64_t i, int64_t j) { return j * c + i; });
  ctx.write_codes(0, dst.data());
}

}  // namespace trnsim::core
