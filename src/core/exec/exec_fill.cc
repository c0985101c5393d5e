// Fills and selections: memset, iota, select, affine_select.
//
// Affine values (iota, affine_select): v(p, i) = iota_base + channel_multiplier * p + i, where
// p is the partition relative to the destination's first partition and i the element's index
// in the destination's free pattern order (0 .. F-1), evaluated in 32-bit two's complement
// (NKI computes iota in int32). This is NKI's pattern expression with the steps of a row-major
// walk of the destination; a program that wants other steps writes through a strided pattern.
#include <fmt/format.h>

#include <vector>

#include "core/exec/alu.h"
#include "core/exec/int_path.h"
#include "core/exec/semantics.h"
#include "numerics/convert.h"

namespace trnsim::core {

namespace {

int32_t affine_value(const isa::Params& p, int64_t partition, int64_t i) {
  const uint64_t v =
      static_cast<uint64_t>(p.iota_base) +
      static_cast<uint64_t>(p.channel_multiplier) * static_cast<uint64_t>(partition) +
      static_cast<uint64_t>(i);
  return static_cast<int32_t>(static_cast<uint32_t>(v));
}

// Integer destinations get each value encoded exactly from its integer value (saturating at
// the type's range), not through FP32, so wide integers keep every bit.
void write_ints(ExecContext& ctx, int slot, const std::vector<double>& values) {
  const num::Format& f = ctx.dtype(slot);
  std::vector<uint8_t>& c = ctx.buffer(1);
  c.resize(values.size() * f.storage_bytes);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint64_t code =
        num::encode(f, values[i], num::Rounding::kNearestEven, 0, ctx.opts().policy);
    for (int b = 0; b < f.storage_bytes; ++b)
      c[i * f.storage_bytes + static_cast<size_t>(b)] = static_cast<uint8_t>(code >> (8 * b));
  }
  ctx.write_codes(slot, c.data());
}

}  // namespace

// dst = value. Float destinations: value rounded to FP32 (the engine's working format), then
// cast with the instruction's rounding. Integer destinations: exact (see write_ints).
void exec_memset(ExecContext& ctx) {
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  if (is_int(ctx.dtype(0))) {
    write_ints(ctx, 0, std::vector<double>(static_cast<size_t>(rows * cols), ctx.p.value));
    return;
  }
  mem::Tile& out = ctx.temp(0, rows, cols);
  out.fill(static_cast<float>(ctx.p.value));
  ctx.write(0, out);
}

void exec_iota(ExecContext& ctx) {
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  if (is_int(ctx.dtype(0))) {
    std::vector<double> v(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i)
        v[static_cast<size_t>(r * cols + i)] = affine_value(ctx.p, r, i);
    write_ints(ctx, 0, v);
    return;
  }
  mem::Tile& out = ctx.temp(0, rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) out.at(r, i) = static_cast<float>(affine_value(ctx.p, r, i));
  ctx.write(0, out);
}

// dst = predicate != 0 ? on_true : on_false, element-wise. A NaN predicate counts as true
// (it is not zero).
void exec_select(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0) || !ctx.same_shape(2, 0) || !ctx.same_shape(3, 0)) return;
  const mem::Tile& pred = ctx.read(1);
  const mem::Tile& t = ctx.read(2);
  const mem::Tile& f = ctx.read(3);
  mem::Tile& out = ctx.temp(0, pred.rows, pred.cols);
  for (int64_t i = 0; i < out.size(); ++i) {
    const auto u = static_cast<size_t>(i);
    out.data[u] = pred.data[u] != 0 ? t.data[u] : f.data[u];
  }
  ctx.write(0, out);
}

// GpSimd: dst = (v(p, i) op0 0) ? on_true : value, with op0 a comparison (bypass means
// is_equal, NKI's default cmp_op) evaluated on the 32-bit affine value.
void exec_affine_select(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0)) return;
  const isa::AluOp cmp = ctx.p.op0 == isa::AluOp::kBypass ? isa::AluOp::kIsEqual : ctx.p.op0;
  if (!is_comparison(cmp)) {
    ctx.fault(mem::FaultKind::kShape, "affine_select needs a comparison op (op0)");
    return;
  }
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  const float on_false = static_cast<float>(ctx.p.value);
  const mem::Tile& t = ctx.read(1);
  mem::Tile& out = ctx.temp(0, rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < cols; ++i) {
      int32_t pred = 0;
      alu_reg(cmp, affine_value(ctx.p, r, i), 0, pred);
      out.at(r, i) = pred ? t.at(r, i) : on_false;
    }
  ctx.write(0, out);
}

}  // namespace trnsim::core
