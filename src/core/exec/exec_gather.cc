// GpSimd's index ops (NKI nc_n_gather, local_gather, sequence_bounds, nonzero_with_count).
// The gathers move raw element codes (bit-exact for every dtype); an index outside the data is
// an index_range fault (NKI: "must be within range", local_gather's "undefined" made a
// diagnostic). GpSimd has 8 cores of 16 partitions each (HARDWARE.md s2.5): local_gather and
// nonzero_with_count work per core.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/exec/int_path.h"
#include "core/exec/semantics.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {

constexpr int64_t kCorePartitions = 16;

bool check_index(ExecContext& ctx, int slot, uint64_t index, int64_t limit, int64_t row) {
  if (index < static_cast<uint64_t>(limit)) return true;
  return ctx.fault_at(mem::FaultKind::kIndexRange, slot,
                      fmt::format("partition {} reads element {} of {} per partition",
                                  ctx.ap(slot).start_partition + row, index, limit));
}

// Segment ids / inputs of fp32 or int32 as exact values (int32 through its bits).
std::vector<double> values(ExecContext& ctx, int slot) {
  std::vector<double> v(static_cast<size_t>(ctx.rows(slot) * ctx.cols(slot)));
  if (is_int(ctx.dtype(slot))) {
    std::vector<uint32_t> bits;
    read_bits(ctx, slot, bits);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(bits[i]);
  } else {
    const mem::Tile& t = ctx.read(slot);
    for (int64_t r = 0; r < t.rows; ++r)
      for (int64_t i = 0; i < t.cols; ++i) v[static_cast<size_t>(r * t.cols + i)] = t.at(r, i);
  }
  return v;
}

// Raw codes move: dst and the source share a dtype (validation checks it; an unvalidated
// program must not read past the source's bytes either).
bool same_dtype(ExecContext& ctx, int dst, int src) {
  if (ctx.dtype(dst) == ctx.dtype(src)) return true;
  return ctx.fault_at(mem::FaultKind::kDtype, dst,
                      fmt::format("{} moves {} unchanged; dst is {}", isa::mnemonic(ctx.in.op),
                                  ctx.dtype(src).name(), ctx.dtype(dst).name()));
}

}  // namespace

// Operands: dst [P, n], data [P, F], indices [P, n] uint32: dst[p, j] = data[p, indices[p, j]].
void exec_n_gather(ExecContext& ctx) {
  const int64_t rows = ctx.rows(0), n = ctx.cols(0), f = ctx.cols(1);
  if (!same_dtype(ctx, 0, 1) || !ctx.shape_is(1, rows, f) || !ctx.shape_is(2, rows, n)) return;
  const auto bytes = static_cast<size_t>(ctx.dtype(0).storage_bytes);
  std::vector<uint32_t> idx;
  read_bits(ctx, 2, idx);
  const std::vector<uint8_t>& data = ctx.codes(1, 0);
  std::vector<uint8_t>& out = ctx.buffer(1);
  out.resize(static_cast<size_t>(rows * n) * bytes);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t i = idx[static_cast<size_t>(r * n + j)];
      if (!check_index(ctx, 1, i, f, r)) return;
      std::memcpy(out.data() + static_cast<size_t>(r * n + j) * bytes,
                  data.data() + static_cast<size_t>(r * f + i) * bytes, bytes);
    }
  ctx.write_codes(0, out.data());
}

// Operands: dst [P, k x e], src [P, F], index [P, m] uint16; P in whole cores of 16. Core c
// reads its 16 partitions of index partition first (index k is index[16 c + k % 16, k / 16]),
// keeps the first k = gather_indices (0: all 16 m), and each of its partitions p takes
// src[p, i_k .. i_k + e) for each k in turn: the NKI API reference's numpy equivalent.
void exec_local_gather(ExecContext& ctx) {
  const int64_t rows = ctx.rows(0), f = ctx.cols(1), m = ctx.cols(2);
  const int64_t e = ctx.p.gather_elems;
  const int64_t k = ctx.p.gather_indices == 0 ? kCorePartitions * m : ctx.p.gather_indices;
  if (!same_dtype(ctx, 0, 1) || !ctx.shape_is(1, rows, f) || !ctx.shape_is(2, rows, m)) return;
  if (rows % kCorePartitions != 0 || e < 1 || k < 1 || k > kCorePartitions * m ||
      ctx.cols(0) != k * e)
    return static_cast<void>(ctx.fault(
        mem::FaultKind::kShape,
        fmt::format("local_gather of {} indices x {} elements on {} partitions (whole cores of "
                    "16, at most {} indices) into {} elements per partition",
                    k, e, rows, kCorePartitions * m, ctx.cols(0))));
  const auto bytes = static_cast<size_t>(ctx.dtype(0).storage_bytes);
  std::vector<uint32_t> idx;
  read_bits(ctx, 2, idx);
  const std::vector<uint8_t>& src = ctx.codes(1, 0);
  std::vector<uint8_t>& out = ctx.buffer(1);
  out.resize(static_cast<size_t>(rows * k * e) * bytes);
  for (int64_t core = 0; core * kCorePartitions < rows; ++core)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t ip = core * kCorePartitions + j % kCorePartitions;
      const uint32_t start = idx[static_cast<size_t>(ip * m + j / kCorePartitions)];
      if (!check_index(ctx, 1, uint64_t{start} + static_cast<uint64_t>(e - 1), f, ip)) return;
      for (int64_t p = core * kCorePartitions; p < (core + 1) * kCorePartitions; ++p)
        std::memcpy(out.data() + static_cast<size_t>(p * k * e + j * e) * bytes,
                    src.data() + static_cast<size_t>(p * f + start) * bytes,
                    static_cast<size_t>(e) * bytes);
    }
  ctx.write_codes(0, out.data());
}

// Operands: dst [1, 2 n], segment_ids [1, n]. A run of equal nonzero ids spans [s, t): each of
// its elements gets start s (dst[0, i]) and end t (dst[0, n + i]); id 0 is padding: n and -1.
void exec_sequence_bounds(ExecContext& ctx) {
  if (!ctx.shape_is(1, 1, ctx.cols(1)) || !ctx.shape_is(0, 1, 2 * ctx.cols(1))) return;
  const std::vector<double> id = values(ctx, 1);
  const auto n = static_cast<int64_t>(id.size());
  mem::Tile& out = ctx.temp(0, 1, 2 * n);
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    if (id[u] == 0)
      out.at(0, i) = static_cast<float>(n);
    else
      out.at(0, i) = i > 0 && id[u - 1] == id[u] ? out.at(0, i - 1) : static_cast<float>(i);
  }
  for (int64_t i = n - 1; i >= 0; --i) {
    const auto u = static_cast<size_t>(i);
    if (id[u] == 0)
      out.at(0, n + i) = -1.0f;
    else
      out.at(0, n + i) =
          i + 1 < n && id[u + 1] == id[u] ? out.at(0, n + i + 1) : static_cast<float>(i + 1);
  }
  ctx.write(0, out);
}

// Operands: dst [P, F + 1] int32, src [P, F] fp32 / int32. In each partition p of src that is
// a GpSimd core's first (absolute partition a multiple of 16): the positions i + iota_base of
// the nonzero src[p, i] in order, `value` (the padding) for the rest, then their count. The
// other partitions of dst keep their values.
void exec_nonzero_with_count(ExecContext& ctx) {
  const int64_t rows = ctx.rows(1), f = ctx.cols(1);
  if (!ctx.shape_is(0, rows, f + 1)) return;
  if (ctx.dtype(0).storage_bytes != static_cast<int>(sizeof(int32_t)))
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 0, "nonzero_with_count writes int32 positions"));
  const std::vector<double> x = values(ctx, 1);
  std::vector<uint8_t>& out = ctx.codes(0, 1);
  // int32 operands (NKI); a wider one from a hand-written program wraps as int32 arithmetic.
  const auto offset = static_cast<int32_t>(ctx.p.iota_base);
  const auto pad = static_cast<int32_t>(std::clamp(ctx.p.value, -2147483648.0, 2147483647.0));
  for (int64_t r = 0; r < rows; ++r) {
    if ((ctx.ap(1).start_partition + r) % kCorePartitions != 0) continue;
    std::vector<int32_t> row(static_cast<size_t>(f + 1), pad);
    int32_t count = 0;
    for (int64_t i = 0; i < f; ++i)
      if (x[static_cast<size_t>(r * f + i)] != 0)
        row[static_cast<size_t>(count++)] =
            static_cast<int32_t>(static_cast<uint32_t>(i) + static_cast<uint32_t>(offset));
    row[static_cast<size_t>(f)] = count;
    std::memcpy(out.data() + static_cast<size_t>(r * (f + 1)) * sizeof(int32_t), row.data(),
                row.size() * sizeof(int32_t));
  }
  ctx.write_codes(0, out.data());
}

}  // namespace trnsim::core
