// Element-wise ops of the Vector / Scalar / GpSimd engines: decode to FP32, one ALU op per
// step with FP32 rounding (alu.h), cast out. Integer operands with bit-vector ops run on bit
// patterns instead (int_path.h), and 32-bit integer tiles on GpSimd in integer arithmetic.
#include <vector>

#include "core/exec/alu.h"
#include "core/exec/int_path.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

using isa::AluOp;

namespace {

// out[i] = reverse ? s op x[i] : x[i] op s, over one row.
void apply_scalar(AluOp op, bool reverse, const float* x, float s, float* out, int64_t n) {
  if (reverse)
    alu_array(op, &s, 0, x, 1, out, n);
  else
    alu_array(op, x, 1, &s, 0, out, n);
}

uint32_t bits_op(AluOp op, bool reverse, uint32_t x, uint32_t s) {
  return reverse ? alu_bits(op, s, x) : alu_bits(op, x, s);
}

bool all_int(ExecContext& ctx, std::initializer_list<int> slots) {
  for (int s : slots)
    if (!is_int(ctx.dtype(s))) return false;
  return true;
}

// tensor_scalar on integer bit patterns: (x op0 a) op1 b.
void tensor_scalar_bits(ExecContext& ctx) {
  std::vector<uint32_t> x, a, b;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  if (!scalar_bits(ctx, ctx.p.arg0, rows, a) || !scalar_bits(ctx, ctx.p.arg1, rows, b)) return;
  read_bits(ctx, 1, x);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t& v = x[static_cast<size_t>(r * cols + c)];
      v = bits_op(ctx.p.op0, ctx.p.reverse0, v, a[static_cast<size_t>(r)]);
      v = bits_op(ctx.p.op1, ctx.p.reverse1, v, b[static_cast<size_t>(r)]);
    }
  write_bits(ctx, 0, x.data());
}

// GpSimd's integer SIMD (HARDWARE.md s2.3: "GpSimd uses native fp32/fp16/int SIMD"): with
// every tile int32 / uint32, add, subtract, multiply, max, min and the comparisons are exact
// 32-bit integer ops (wrapping), as nki.isa.tensor_tensor documents for int32 / uint32 tiles on
// GpSimd. Comparisons and max / min are unsigned when both inputs are uint32.
bool gpsimd_int32(ExecContext& ctx) {
  if (ctx.engine != isa::Engine::kGpSimd) return false;
  for (int s : {0, 1, 2})
    if (!is_int(ctx.dtype(s)) || ctx.dtype(s).storage_bytes != 4) return false;
  switch (ctx.p.op0) {
    case AluOp::kAdd:
    case AluOp::kSubtract:
    case AluOp::kMult:
    case AluOp::kMax:
    case AluOp::kMin:
      return true;
    default:
      return is_comparison(ctx.p.op0);
  }
}

uint32_t int32_op(AluOp op, uint32_t a, uint32_t b, bool is_unsigned) {
  // The unsigned order is the signed order of the values with their top bit flipped.
  const bool ordered = op == AluOp::kMax || op == AluOp::kMin || is_comparison(op);
  const uint32_t flip = is_unsigned && ordered ? 0x80000000u : 0u;
  int32_t out = 0;
  alu_reg(op, static_cast<int32_t>(a ^ flip), static_cast<int32_t>(b ^ flip), out);
  return is_comparison(op) ? static_cast<uint32_t>(out) : static_cast<uint32_t>(out) ^ flip;
}

}  // namespace

void exec_tensor_tensor(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0) || !ctx.same_shape(2, 0)) return;
  if (gpsimd_int32(ctx)) {
    const bool is_unsigned = !ctx.dtype(1).is_signed && !ctx.dtype(2).is_signed;
    std::vector<uint32_t> a, b;
    read_bits(ctx, 1, a);
    read_bits(ctx, 2, b);
    for (size_t i = 0; i < a.size(); ++i) a[i] = int32_op(ctx.p.op0, a[i], b[i], is_unsigned);
    write_bits(ctx, 0, a.data());
    return;
  }
  if (is_bitvec(ctx.p.op0) && all_int(ctx, {0, 1, 2})) {
    std::vector<uint32_t> a, b;
    read_bits(ctx, 1, a);
    read_bits(ctx, 2, b);
    for (size_t i = 0; i < a.size(); ++i) a[i] = alu_bits(ctx.p.op0, a[i], b[i]);
    write_bits(ctx, 0, a.data());
    return;
  }
  const mem::Tile& a = ctx.read(1);
  const mem::Tile& b = ctx.read(2);
  mem::Tile& out = ctx.temp(0, a.rows, a.cols);
  alu_array(ctx.p.op0, a.data.data(), 1, b.data.data(), 1, out.data.data(), a.size());
  ctx.write(0, out);
}

void exec_tensor_scalar(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0)) return;
  if (is_bitvec(ctx.p.op0) && is_bitvec(ctx.p.op1) && all_int(ctx, {0, 1}))
    return tensor_scalar_bits(ctx);
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  const auto a = ctx.scalar(ctx.p.arg0, rows, "arg0");
  const auto b = ctx.scalar(ctx.p.arg1, rows, "arg1");
  if (!a || !b) return;
  const mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    apply_scalar(ctx.p.op0, ctx.p.reverse0, x.row(r), a->at(r), out.row(r), cols);
    apply_scalar(ctx.p.op1, ctx.p.reverse1, out.row(r), b->at(r), out.row(r), cols);
  }
  ctx.write(0, out);
}

// (in0 op0 scalar) op1 in1; reverse0 / reverse1 swap the operands of op0 / op1.
void exec_scalar_tensor_tensor(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0) || !ctx.same_shape(2, 0)) return;
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  const auto s = ctx.scalar(ctx.p.arg0, rows, "arg0");
  if (!s) return;
  const mem::Tile& x = ctx.read(1);
  const mem::Tile& y = ctx.read(2);
  mem::Tile& out = ctx.temp(0, rows, cols);
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out.row(r);
    apply_scalar(ctx.p.op0, ctx.p.reverse0, x.row(r), s->at(r), o, cols);
    if (ctx.p.reverse1)
      alu_array(ctx.p.op1, y.row(r), 1, o, 1, o, cols);
    else
      alu_array(ctx.p.op1, o, 1, y.row(r), 1, o, cols);
  }
  ctx.write(0, out);
}

// Equal dtypes copy bits (NC-v2 ScalarE excepted: ExecOptions::scalar_copy_bit_exact);
// otherwise the copy is a cast through FP32.
void exec_tensor_copy(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0)) return;
  const bool bit_exact = ctx.engine != isa::Engine::kScalar || ctx.opts().scalar_copy_bit_exact;
  if (bit_exact && ctx.dtype(0) == ctx.dtype(1)) {
    ctx.write_codes(0, ctx.codes(1, 0).data());
    return;
  }
  ctx.write(0, ctx.read(1));
}

// VectorE reciprocal: 1/x correctly rounded in FP32 (the VectorE one is documented as more
// precise than ScalarE's; its exact error is not public, HARDWARE.md s11 item 3).
void exec_reciprocal(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0)) return;
  const mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, x.rows, x.cols);
  for (int64_t i = 0; i < x.size(); ++i)
    out.data[static_cast<size_t>(i)] = 1.0f / x.data[static_cast<size_t>(i)];
  ctx.write(0, out);
}

}  // namespace trnsim::core
