// Reductions and scans. Order (the hardware's is not public, HARDWARE.md s11): sequential in
// access-pattern order, acc = x0, then acc = acc op xi with one FP32 rounding per step, so
// results are reproducible and an independent re-implementation of the same order matches
// bit for bit.
#include <fmt/format.h>

#include "core/exec/alu.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

// dst[p, o] = reduce over the innermost `reduce_axes` free dims of src (0 = all of them).
void exec_tensor_reduce(ExecContext& ctx) {
  const isa::AccessPattern& src = ctx.ap(1);
  const int k = ctx.p.reduce_axes == 0 ? src.ndim : ctx.p.reduce_axes;
  if (k < 0 || k > src.ndim) {
    ctx.fault(mem::FaultKind::kShape, fmt::format("reduce_axes {} but the source has {} free dims",
                                                  ctx.p.reduce_axes, src.ndim));
    return;
  }
  int64_t inner = 1;
  for (int d = src.ndim - k; d < src.ndim; ++d) inner *= src.dims[d].size;
  const int64_t outer = ctx.cols(1) / inner;
  if (!ctx.shape_is(0, ctx.rows(1), outer)) return;
  const mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, x.rows, outer);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t o = 0; o < outer; ++o)
      out.at(r, o) = alu_reduce(ctx.p.reduce_op, x.row(r) + o * inner, inner);
  ctx.write(0, out);
}

// r_i = (x_i op0 r_{i-1}) op1 y_i along the free dim, r_{-1} = arg0 (immediate or [P,1]).
void exec_tensor_tensor_scan(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0) || !ctx.same_shape(2, 0)) return;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  const auto init = ctx.scalar(ctx.p.arg0, rows, "initial value (arg0)");
  if (!init) return;
  const mem::Tile& x = ctx.read(1);
  const mem::Tile& y = ctx.read(2);
  mem::Tile& out = ctx.temp(0, rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    float prev = init->at(r);
    for (int64_t i = 0; i < cols; ++i) {
      prev = alu(ctx.p.op1, alu(ctx.p.op0, x.at(r, i), prev), y.at(r, i));
      out.at(r, i) = prev;
    }
  }
  ctx.write(0, out);
}

// dst = (src op0 arg0) op1 arg1 (op1 bypass by default); reduce_dst[p] = reduce_op over dst's
// FP32 values (before the output cast).
void exec_tensor_scalar_reduce(ExecContext& ctx) {
  if (!ctx.same_shape(2, 0) || !ctx.shape_is(1, ctx.rows(0), 1)) return;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  const auto a = ctx.scalar(ctx.p.arg0, rows, "arg0");
  const auto b = ctx.scalar(ctx.p.arg1, rows, "arg1");
  if (!a || !b) return;
  const mem::Tile& x = ctx.read(2);
  mem::Tile& out = ctx.temp(0, rows, cols);
  mem::Tile& red = ctx.temp(1, rows, 1);
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out.row(r);
    const float sa = a->at(r), sb = b->at(r);
    for (int64_t i = 0; i < cols; ++i) {
      const float v =
          ctx.p.reverse0 ? alu(ctx.p.op0, sa, x.at(r, i)) : alu(ctx.p.op0, x.at(r, i), sa);
      o[i] = ctx.p.reverse1 ? alu(ctx.p.op1, sb, v) : alu(ctx.p.op1, v, sb);
    }
    red.at(r, 0) = alu_reduce(ctx.p.reduce_op, o, cols);
  }
  ctx.write(0, out, 0);
  ctx.write(1, red, 1);
}

// GpSimd: dst[0, f] = reduce_op over partitions p = 0..P-1 of src[p, f], in partition order.
void exec_partition_reduce(ExecContext& ctx) {
  if (!ctx.shape_is(0, 1, ctx.cols(1))) return;
  const mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, 1, x.cols);
  for (int64_t f = 0; f < x.cols; ++f) out.at(0, f) = x.at(0, f);
  for (int64_t r = 1; r < x.rows; ++r)
    for (int64_t f = 0; f < x.cols; ++f)
      out.at(0, f) = alu(ctx.p.reduce_op, out.at(0, f), x.at(r, f));
  ctx.write(0, out);
}

}  // namespace trnsim::core
