#include "core/exec/int_path.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/exec/alu.h"

namespace trnsim::core {

bool is_int(const num::Format& f) { return f.kind == num::Kind::kInt; }

void read_bits(ExecContext& ctx, int slot, std::vector<uint32_t>& out) {
  const num::Format& f = ctx.dtype(slot);
  const std::vector<uint8_t>& c = ctx.codes(slot, 0);
  const size_t n = c.size() / f.storage_bytes;
  out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* e = c.data() + i * f.storage_bytes;
    switch (f.storage_bytes) {
      case 1:
        out[i] = f.is_signed ? static_cast<uint32_t>(static_cast<int8_t>(e[0])) : e[0];
        break;
      case 2: {
        uint16_t v;
        std::memcpy(&v, e, 2);
        out[i] = f.is_signed ? static_cast<uint32_t>(static_cast<int16_t>(v)) : v;
        break;
      }
      default:
        std::memcpy(&out[i], e, 4);
        break;
    }
  }
}

void write_bits(ExecContext& ctx, int slot, const uint32_t* v) {
  const num::Format& f = ctx.dtype(slot);
  const size_t n = static_cast<size_t>(ctx.rows(slot) * ctx.cols(slot));
  std::vector<uint8_t>& c = ctx.buffer(1);
  c.resize(n * f.storage_bytes);
  for (size_t i = 0; i < n; ++i)
    std::memcpy(c.data() + i * f.storage_bytes, &v[i], f.storage_bytes);
  ctx.write_codes(slot, c.data());
}

bool scalar_bits(ExecContext& ctx, const isa::ScalarArg& a, int64_t rows,
                 std::vector<uint32_t>& out) {
  if (a.operand < 0) {
    out.assign(static_cast<size_t>(rows), static_cast<uint32_t>(to_i32(a.imm)));
    return true;
  }
  if (!ctx.has(a.operand) || ctx.rows(a.operand) != rows || ctx.cols(a.operand) != 1)
    return ctx.fault(mem::FaultKind::kShape,
                     fmt::format("scalar operand {} must be a [{}, 1] column", a.operand, rows));
  if (!is_int(ctx.dtype(a.operand))) {  // a float column: its values as int32
    const mem::Tile& t = ctx.read(a.operand);
    out.resize(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r)
      out[static_cast<size_t>(r)] = static_cast<uint32_t>(to_i32(t.at(r, 0)));
    return true;
  }
  read_bits(ctx, a.operand, out);
  return true;
}

}  // namespace trnsim::core
