// range_select: the NC-v3 VectorE select on a range of the free index, with a fused max
// (NKI nisa.range_select). For element i of a partition (i the flat free index),
//   dst[p, i] = (iota_base + i) op0 arg0[p] and (iota_base + i) op1 arg1[p] ? on_true : value
// where iota_base is NKI's range_start, arg0 / arg1 its bound0 / bound1 (immediates or [P, 1]
// columns) and value its on_false_value. The index is compared as FP32 (the bounds are FP32
// tiles). reduce_res[p] = the FP32 max of the row's selected values, kept in the partition's
// VectorE accumulator register (ExecState::vector_accumulator): without accumulate the
// register starts from this row's max (NKI reduce_cmd reset_reduce / idle), with accumulate
// it takes the max with the register's earlier value (reduce_cmd.reduce), so a chain of
// range_selects reduces over all of them as the NKI reference's chaining example does.
#include <algorithm>
#include <vector>

#include "core/exec/alu.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

// Operands: dst like on_true, reduce_res [P, 1], on_true; columns for arg0 / arg1.
void exec_range_select(ExecContext& ctx) {
  if (!ctx.core().features.range_select) {
    ctx.fault(mem::FaultKind::kUnsupported, "range_select needs the VectorE of NC-v3 or newer");
    return;
  }
  if (!ctx.same_shape(2, 0)) return;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  if (!ctx.shape_is(1, rows, 1)) return;
  if (ctx.p.reduce_op != isa::AluOp::kMax) {
    ctx.fault(mem::FaultKind::kShape, "range_select reduces with max only (reduce_op=max)");
    return;
  }
  for (const isa::AluOp op : {ctx.p.op0, ctx.p.op1})
    if (!is_comparison(op)) {
      ctx.fault(mem::FaultKind::kShape, "range_select needs comparison ops (op0, op1)");
      return;
    }
  const auto b0 = ctx.scalar(ctx.p.arg0, rows, "bound0 (arg0)");
  if (!b0) return;
  const auto b1 = ctx.scalar(ctx.p.arg1, rows, "bound1 (arg1)");
  if (!b1) return;
  const mem::Tile& t = ctx.read(2);
  mem::Tile& out = ctx.temp(0, rows, cols);
  mem::Tile& red = ctx.temp(1, rows, 1);
  const float on_false = static_cast<float>(ctx.p.value);
  std::vector<float>& acc = ctx.vector_accumulator();
  const int64_t p0 = ctx.ap(0).start_partition;
  for (int64_t r = 0; r < rows; ++r) {
    const float lo = b0->at(r), hi = b1->at(r);
    float* o = out.row(r);
    float m = on_false;
    for (int64_t i = 0; i < cols; ++i) {
      const auto idx = static_cast<float>(ctx.p.iota_base + i);
      const bool keep = alu(ctx.p.op0, idx, lo) != 0 && alu(ctx.p.op1, idx, hi) != 0;
      o[i] = keep ? t.at(r, i) : on_false;
      m = i == 0 ? o[i] : std::max(m, o[i]);
    }
    float& a = acc[static_cast<size_t>(p0 + r)];
    a = ctx.p.dma_accumulate ? std::max(a, m) : m;
    red.at(r, 0) = a;
  }
  ctx.write(0, out, 0);
  ctx.write(1, red, 1);
}

}  // namespace trnsim::core
