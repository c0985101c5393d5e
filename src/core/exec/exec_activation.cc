// ScalarE activation (and activation_reduce) and the NC-v4 VectorE exponential.
//   activation:  dst = func(x * scale + bias), the affine part and func evaluated in double and
//                rounded once to FP32 (act_func.h), then cast to dst's dtype.
//   activation_reduce: also reduce_dst[p] = sum of the row's FP32 results, added sequentially
//                in FP32 (acc = y0, acc = acc + yi) before the output cast.
//   activate2:   dst = func((x op0 arg0) op1 arg1) (NC-v4), each ALU op an FP32 operation as
//                on VectorE (alu.h), func evaluated in double and rounded once; activate2_reduce
//                also reduce_dst[p] = reduce_op of the row's FP32 results, left to right.
//   exponential: dst = exp(x - m), m = arg0 (an immediate or a [P,1] column, typically the row
//                max): x - m is an FP32 subtraction, exp is computed in double and rounded
//                once. The running sum: each row's FP32 sum (same order) is added to the
//                partition's VectorE accumulator register (ExecState::vector_accumulator),
//                where it accumulates across instructions.
#include <cmath>

#include "core/exec/act_func.h"
#include "core/exec/alu.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

namespace {

float row_sum(const float* y, int64_t n) { return alu_reduce(isa::AluOp::kAdd, y, n); }

// x op s, or s op x with reverse; bypass keeps x whatever the order.
float alu_stage(isa::AluOp op, bool reverse, float x, float s) {
  if (op == isa::AluOp::kBypass) return x;
  return reverse ? alu(op, s, x) : alu(op, x, s);
}

}  // namespace

void exec_activation(ExecContext& ctx) {
  const bool reduce = ctx.in.op == isa::Opcode::kActivationReduce;
  const int src = reduce ? 2 : 1;
  if (!ctx.same_shape(src, 0)) return;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  if (reduce && !ctx.shape_is(1, rows, 1)) return;
  const auto scale = ctx.scalar(ctx.p.scale, rows, "scale");
  const auto bias = ctx.scalar(ctx.p.bias, rows, "bias");
  if (!scale || !bias) return;
  const mem::Tile& x = ctx.read(src);
  mem::Tile& out = ctx.temp(0, rows, cols);
  mem::Tile& red = ctx.temp(1, rows, 1);
  const double alpha = ctx.p.alpha;
  for (int64_t r = 0; r < rows; ++r) {
    const double s = scale->at(r), b = bias->at(r);
    const float* xr = x.row(r);
    float* o = out.row(r);
    for (int64_t i = 0; i < cols; ++i)
      o[i] = static_cast<float>(act_eval(ctx.p.func, static_cast<double>(xr[i]) * s + b, alpha));
    if (reduce) red.at(r, 0) = row_sum(o, cols);
  }
  ctx.write(0, out, 0);
  if (reduce) ctx.write(1, red, 1);
}

void exec_activate2(ExecContext& ctx) {
  if (!ctx.core().features.activate2) {
    ctx.fault(mem::FaultKind::kUnsupported, "activate2 needs the ScalarE ALU stage of NC-v4");
    return;
  }
  const bool reduce = ctx.in.op == isa::Opcode::kActivate2Reduce;
  const int src = reduce ? 2 : 1;
  if (!ctx.same_shape(src, 0)) return;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  if (reduce && !ctx.shape_is(1, rows, 1)) return;
  const auto a = ctx.scalar(ctx.p.arg0, rows, "imm0 (arg0)");
  const auto b = ctx.scalar(ctx.p.arg1, rows, "imm1 (arg1)");
  if (!a || !b) return;
  const mem::Tile& x = ctx.read(src);
  mem::Tile& out = ctx.temp(0, rows, cols);
  mem::Tile& red = ctx.temp(1, rows, 1);
  const isa::Params& p = ctx.p;
  for (int64_t r = 0; r < rows; ++r) {
    const float sa = a->at(r), sb = b->at(r);
    float* o = out.row(r);
    for (int64_t i = 0; i < cols; ++i) {
      const float v =
          alu_stage(p.op1, p.reverse1, alu_stage(p.op0, p.reverse0, x.at(r, i), sa), sb);
      o[i] = static_cast<float>(act_eval(p.func, static_cast<double>(v), p.alpha));
    }
    if (reduce) red.at(r, 0) = alu_reduce(p.reduce_op, o, cols);
  }
  ctx.write(0, out, 0);
  if (reduce) ctx.write(1, red, 1);
}

void exec_exponential(ExecContext& ctx) {
  if (!ctx.core().features.fast_exponential) {
    ctx.fault(mem::FaultKind::kUnsupported, "exponential needs the VectorE exp of NC-v4");
    return;
  }
  if (!ctx.same_shape(1, 0)) return;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  const auto m = ctx.scalar(ctx.p.arg0, rows, "max (arg0)");
  if (!m) return;
  const mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, rows, cols);
  std::vector<float>& acc = ctx.vector_accumulator();
  const int64_t p0 = ctx.ap(0).start_partition;
  for (int64_t r = 0; r < rows; ++r) {
    const float mr = m->at(r);
    float* o = out.row(r);
    for (int64_t i = 0; i < cols; ++i) {
      const float d = x.at(r, i) - mr;
      o[i] = static_cast<float>(std::exp(static_cast<double>(d)));
    }
  }
  ctx.write(0, out, 0);
  for (int64_t r = 0; r < rows; ++r) {
    float& a = acc[static_cast<size_t>(p0 + r)];
    a = a + row_sum(out.row(r), cols);
  }
}

}  // namespace trnsim::core
