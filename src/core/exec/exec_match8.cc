// find_index8 and match_replace8: the VectorE's search for 8 values per partition, the second
// half of a top-k step after max8 (NKI nc_find_index8, nc_match_replace8). Values are compared
// as FP32 (as max8 reads them), equal when == holds, so NaN matches nothing and -0 matches +0.
//
// A value repeated in vals claims a different position of data each time: find_index8 takes
// vals in order 0..7, match_replace8 in order 7..0 (the NKI reference: with data [1, 2, 3, 4,
// 8, 8, ...] and vals [3, 8, 8, ...] find_index8 gives 4, 5, 6, ... to the 8s and
// match_replace8 gives them in descending slots). A value with no unclaimed position left gets
// all ones (0xFFFF / 0xFFFFFFFF), the sentinel the current NKI reference documents for
// find_index8; match_replace8 then replaces nothing for it (the reference leaves that case
// undefined; trnsim's choice).
#include <fmt/format.h>

#include <vector>

#include "core/exec/int_path.h"
#include "core/exec/semantics.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {

constexpr int64_t kValues = 8;
constexpr int64_t kDataMin = 8, kDataMax = 16384;
constexpr uint32_t kNotFound = 0xFFFFFFFFu;

// Positions of vals in one partition's data, vals taken in `order`; claimed[i] marks data
// positions already given to an earlier value.
void find_row(const float* data, int64_t n, const float* vals, const int64_t (&order)[kValues],
              std::vector<char>& claimed, uint32_t* out) {
  claimed.assign(static_cast<size_t>(n), 0);
  for (int64_t j : order) {
    out[j] = kNotFound;
    for (int64_t i = 0; i < n; ++i) {
      if (claimed[static_cast<size_t>(i)] || !(data[i] == vals[j])) continue;
      claimed[static_cast<size_t>(i)] = 1;
      out[j] = static_cast<uint32_t>(i);
      break;
    }
  }
}

bool data_size_ok(ExecContext& ctx, int slot, int64_t lo) {
  if (ctx.cols(slot) >= lo && ctx.cols(slot) <= kDataMax) return true;
  return ctx.fault_at(mem::FaultKind::kShape, slot,
                      fmt::format("{} takes {}..{} data elements per partition, got {}",
                                  isa::mnemonic(ctx.in.op), lo, kDataMax, ctx.cols(slot)));
}

}  // namespace

// Operands: dst [P, 8] (uint16 / uint32), data [P, 8..16384], vals [P, 8].
void exec_find_index8(ExecContext& ctx) {
  if (!data_size_ok(ctx, 1, kDataMin)) return;
  const int64_t rows = ctx.rows(1);
  if (!ctx.shape_is(0, rows, kValues) || !ctx.shape_is(2, rows, kValues)) return;
  const mem::Tile& data = ctx.read(1);
  const mem::Tile& vals = ctx.read(2);
  static constexpr int64_t kForward[kValues] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<uint32_t> out(static_cast<size_t>(rows * kValues));
  std::vector<char> claimed;
  for (int64_t r = 0; r < rows; ++r)
    find_row(data.row(r), data.cols, vals.row(r), kForward, claimed,
             &out[static_cast<size_t>(r * kValues)]);
  write_bits(ctx, 0, out.data());
}

// Operands: dst like data, dst_idx [P, 8] (uint16 / uint32), data [P, <= 16384], vals [P, 8];
// `value` replaces each match.
void exec_match_replace8(ExecContext& ctx) {
  if (!data_size_ok(ctx, 2, 1)) return;
  const int64_t rows = ctx.rows(2);
  if (!ctx.same_shape(0, 2) || !ctx.shape_is(1, rows, kValues) || !ctx.shape_is(3, rows, kValues))
    return;
  const mem::Tile& vals = ctx.read(3);
  mem::Tile& data = ctx.read(2);  // the decoded copy becomes dst
  static constexpr int64_t kBackward[kValues] = {7, 6, 5, 4, 3, 2, 1, 0};
  std::vector<uint32_t> idx(static_cast<size_t>(rows * kValues));
  std::vector<char> claimed;
  const float imm = static_cast<float>(ctx.p.value);
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t* found = &idx[static_cast<size_t>(r * kValues)];
    find_row(data.row(r), data.cols, vals.row(r), kBackward, claimed, found);
    for (int64_t j = 0; j < kValues; ++j)
      if (found[j] != kNotFound) data.at(r, found[j]) = imm;
  }
  ctx.write(0, data);
  write_bits(ctx, 1, idx.data());
}

}  // namespace trnsim::core
