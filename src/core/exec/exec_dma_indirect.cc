// dma_gather / dma_scatter (HARDWARE.md s4, DGE: software-DGE gather and scatter). The HBM
// operand is a tensor's table of rows [rows, F] (isa/validate_dma_indirect.cc); SBUF partition
// p moves row offsets[p], a row number read from SBUF when the transfer runs:
//   - gather: dst[p] = src row offsets[p]; scatter: dst row offsets[p] = src[p];
//   - equal dtypes move bytes (bit-exact); different ones cast through fp32 as dma_copy does;
//   - every row number is checked before anything moves: one outside [0, rows) is an
//     index_range fault naming the partition and the row, and the instruction writes nothing
//     (NKI's default oob_mode.error); with skip_oob (oob_mode.skip) that partition moves
//     nothing: a gather leaves its dst partition as it was, a scatter writes no row for it;
//   - a scatter whose offsets repeat a row writes it once per partition in partition order, so
//     the last partition's data stays (the hardware's order among DMA engines is not public:
//     trnsim's choice; NKI asks for unique offsets);
//   - a scatter with accumulate adds src into the rows (NKI atomic_rmw): each partition's row
//     read, added in fp32 and written before the next, so a repeated row adds every partition.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/exec/matmul_common.h"
#include "core/exec/semantics.h"
#include "isa/dma_add_dtypes.h"

namespace trnsim::core {

namespace {

constexpr int kOffsetsSlot = 2;

// Row `row` of the table operand `table`, as a one-row pattern.
isa::AccessPattern row_of(const isa::AccessPattern& table, int64_t row) {
  isa::AccessPattern ap = table;
  ap.num_partitions = 1;
  ap.offset += row * table.partition_stride * table.dtype.storage_bytes;
  return ap;
}

constexpr int64_t kSkip = -1;  // a partition that moves nothing (skip_oob)

// The row numbers, one per partition (kSkip for one outside the table under skip_oob), or
// nullopt after a fault.
std::optional<std::vector<int64_t>> read_rows(ExecContext& ctx, int table_slot) {
  const num::Format& f = ctx.dtype(kOffsetsSlot);
  if (f.dtype != num::Dtype::kInt32 && f.dtype != num::Dtype::kUint32) {
    ctx.fault_at(mem::FaultKind::kDtype, kOffsetsSlot,
                 fmt::format("offsets are int32 or uint32 row numbers, not {}", f.name()));
    return std::nullopt;
  }
  const std::vector<uint8_t>& codes = ctx.codes(kOffsetsSlot, 0);
  const int64_t parts = ctx.rows(kOffsetsSlot), rows = ctx.rows(table_slot);
  std::vector<int64_t> out(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    uint32_t bits = 0;
    std::memcpy(&bits, codes.data() + p * 4, 4);
    const int64_t row =
        f.dtype == num::Dtype::kInt32 ? int64_t{static_cast<int32_t>(bits)} : int64_t{bits};
    if ((row < 0 || row >= rows) && ctx.p.dma_skip_oob) {
      out[static_cast<size_t>(p)] = kSkip;
      continue;
    }
    if (row < 0 || row >= rows) {
      ctx.fault_at(
          mem::FaultKind::kIndexRange, table_slot,
          fmt::format("offsets[{}] = {} is outside the {} rows of the table", p, row, rows));
      return std::nullopt;
    }
    out[static_cast<size_t>(p)] = row;
  }
  return out;
}

void gather(ExecContext& ctx, const std::vector<int64_t>& rows) {
  const isa::AccessPattern& table = ctx.ap(1);
  const int64_t f = ctx.cols(0);
  if (std::find(rows.begin(), rows.end(), kSkip) != rows.end()) {
    // Partition by partition, skipped ones untouched (the DMA makes no descriptor for them).
    const bool same = ctx.dtype(0) == ctx.dtype(1);
    mem::Tile& one = ctx.temp(1, 1, f);
    std::vector<uint8_t>& codes = ctx.buffer(2);
    isa::AccessPattern part = ctx.ap(0);
    part.num_partitions = 1;
    for (size_t p = 0; p < rows.size(); ++p, ++part.start_partition) {
      if (rows[p] == kSkip) continue;
      if (same) {
        mem::read_codes(ctx.mem(), row_of(table, rows[p]), codes);
        mem::write_codes(ctx.mem(), part, codes.data());
      } else {
        ctx.read_pattern(row_of(table, rows[p]), one);
        ctx.write_pattern(part, one, static_cast<uint64_t>(p) * static_cast<uint64_t>(f));
      }
    }
    return;
  }
  if (ctx.dtype(0) == ctx.dtype(1)) {
    std::vector<uint8_t>& all = ctx.buffer(1);
    std::vector<uint8_t>& one = ctx.buffer(2);
    all.clear();
    for (int64_t row : rows) {
      mem::read_codes(ctx.mem(), row_of(table, row), one);
      all.insert(all.end(), one.begin(), one.end());
    }
    ctx.write_codes(0, all.data());
    return;
  }
  mem::Tile& out = ctx.temp(0, static_cast<int64_t>(rows.size()), f);
  mem::Tile& one = ctx.temp(1, 1, f);
  for (size_t p = 0; p < rows.size(); ++p) {
    ctx.read_pattern(row_of(table, rows[p]), one);
    std::copy(one.row(0), one.row(0) + f, out.row(static_cast<int64_t>(p)));
  }
  ctx.write(0, out);
}

// dst row offsets[p] += src[p], partition after partition (a repeated row adds each): the
// row read, the fp32 sum, the row written back in dst's dtype (as dma_copy's accumulate).
// int32 / uint32 rows add through fp32 too (isa/dma_add_dtypes.h).
void scatter_add(ExecContext& ctx, const std::vector<int64_t>& rows) {
  const isa::AccessPattern& table = ctx.ap(0);
  const int64_t f = ctx.cols(1);
  const num::Format& fd = ctx.dtype(0);
  if (fd != ctx.dtype(1) || !isa::scatter_add_dtype(fd.dtype))
    return static_cast<void>(ctx.fault_at(
        mem::FaultKind::kDtype, 0,
        "a scatter that adds takes bf16, fp32, int32 or uint32, the same on both sides"));
  const mem::Tile& src = ctx.read(1);
  mem::Tile& one = ctx.temp(0, 1, f);
  for (size_t p = 0; p < rows.size(); ++p) {
    if (rows[p] == kSkip) continue;
    const auto r = static_cast<int64_t>(p);
    ctx.read_pattern(row_of(table, rows[p]), one);
    for (int64_t i = 0; i < f; ++i) one.at(0, i) = one.at(0, i) + src.at(r, i);
    ctx.write_pattern(row_of(table, rows[p]), one, static_cast<uint64_t>(r * f));
  }
}

void scatter(ExecContext& ctx, const std::vector<int64_t>& rows) {
  const isa::AccessPattern& table = ctx.ap(0);
  const int64_t f = ctx.cols(1);
  if (ctx.p.dma_accumulate) return scatter_add(ctx, rows);
  if (ctx.dtype(0) == ctx.dtype(1)) {
    const std::vector<uint8_t>& src = ctx.codes(1, 1);
    const int64_t row_bytes = f * ctx.dtype(1).storage_bytes;
    for (size_t p = 0; p < rows.size(); ++p)
      if (rows[p] != kSkip)
        mem::write_codes(ctx.mem(), row_of(table, rows[p]),
                         src.data() + static_cast<int64_t>(p) * row_bytes);
    return;
  }
  const mem::Tile& src = ctx.read(1);
  mem::Tile& one = ctx.temp(0, 1, f);
  for (size_t p = 0; p < rows.size(); ++p) {
    if (rows[p] == kSkip) continue;
    const auto r = static_cast<int64_t>(p);
    std::copy(src.row(r), src.row(r) + f, one.row(0));
    ctx.write_pattern(row_of(table, rows[p]), one, static_cast<uint64_t>(r * f));
  }
}

}  // namespace

void exec_dma_indirect(ExecContext& ctx) {
  const bool is_gather = ctx.in.op == isa::Opcode::kDmaGather;
  const int table_slot = is_gather ? 1 : 0, sbuf_slot = is_gather ? 0 : 1;
  if (!ctx.has(kOffsetsSlot))
    return static_cast<void>(ctx.fault(mem::FaultKind::kShape, "no offsets operand"));
  if (!ctx.shape_is(kOffsetsSlot, ctx.rows(sbuf_slot), 1)) return;
  if (ctx.cols(table_slot) != ctx.cols(sbuf_slot))
    return static_cast<void>(ctx.fault_at(mem::FaultKind::kShape, table_slot,
                                          fmt::format("rows of {} elements, partitions of {}",
                                                      ctx.cols(table_slot), ctx.cols(sbuf_slot))));
  if (ctx.dtype(0) != ctx.dtype(1) && (is_mx_only(ctx.dtype(0)) || is_mx_only(ctx.dtype(1))))
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 0, "DMA casts do not take MX types (fp4_e2m1, e8m0)"));
  const std::optional<std::vector<int64_t>> rows = read_rows(ctx, table_slot);
  if (!rows) return;
  if (is_gather)
    gather(ctx, *rows);
  else
    scatter(ctx, *rows);
}

}  // namespace trnsim::core
