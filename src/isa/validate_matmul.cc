// TensorE rules (HARDWARE.md s2.1, s2.2): K/M/N limits from the generation's MatmulLimits,
// input format pairing, PSUM result formats and banks, PE tiling, double-row FP8 and MX
// matmul shapes, transpose. load_stationary and multiply_moving are checked together: each
// multiply_moving against the last load_stationary before it in the pe stream.
#include <fmt/ranges.h>

#include "isa/access_rules.h"
#include "isa/validate_context.h"

namespace trnsim::isa::detail {

namespace {

using num::Dtype;

constexpr int kTileQuantum = 32;  // PE tile positions and sizes are multiples of 32
constexpr int kMxPack = 4;        // MX elements packed along the innermost free dim

bool fp32_like(const num::Format& f) { return f.dtype == Dtype::kFp32 || f.dtype == Dtype::kTf32; }
bool is_fp8(const num::Format& f) { return f.kind == num::Kind::kFloat && f.storage_bytes == 1; }
bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void limit(Context& c, std::string_view what, int64_t value, int64_t max) {
  if (value > max)
    c.report(RuleKind::kMatmulShape, "{} = {} exceeds {} on {}", what, value, max, c.core.name);
}

// A TensorE write into PSUM: a bf16 matmul result needs the feature (a bit-exact transpose
// writes 16 bits without it); on generations whose fp32 N limit is one bank (v2/v3), the
// tile must not cross a bank.
void psum_result(Context& c, int i, bool matmul_result = true) {
  const AccessPattern& d = c.operand(i);
  if (matmul_result && d.dtype.dtype == Dtype::kBf16 && !has_feature(c.core, Feature::kBf16Psum))
    c.report(RuleKind::kFeature, "a bf16 matmul result needs {}, which {} does not have",
             kFeatureNames.name(Feature::kBf16Psum), c.core.name);
  const int64_t bank = c.core.psum.bank_bytes;
  const bool one_bank = int64_t{c.core.tensor.limits.n_max_fp32_psum} * 4 <= bank;
  if (!one_bank || bank <= 0 || d.space != Space::kPsum || d.ndim < 0 || d.ndim > kMaxFreeDims)
    return;
  const ByteExtent x = byte_extent(d);
  if (x.lo >= 0 && x.lo / bank != (x.hi - 1) / bank)
    c.report(RuleKind::kPsumBank,
             "{} bytes [{}, {}) cross a {}-byte PSUM bank; a matmul "
             "output tile must fit one bank on {}",
             operand_label(*c.inst, i), static_cast<int64_t>(x.lo), static_cast<int64_t>(x.hi),
             bank, c.core.name);
}

// PE tiling: sizes from the generation's lists, positions in 32s, inside the array, and the
// operands within the tile (K rows, M columns).
void tile(Context& c, int64_t k, int64_t m, bool columns) {
  const Params& p = c.inst->p;
  const auto& t = c.core.tensor;
  if (!contains(t.row_tile_sizes, p.tile_rows) || p.tile_row % kTileQuantum != 0 ||
      p.tile_row < 0 || p.tile_row + p.tile_rows > t.pe_rows)
    c.report(RuleKind::kPeTile, "row tile {}+{} not allowed (sizes {}, positions in 32s, {} rows)",
             p.tile_row, p.tile_rows, fmt::join(t.row_tile_sizes, "/"), t.pe_rows);
  else if (k > p.tile_rows && p.tile_rows < t.pe_rows)  // else the K limit reports it
    c.report(RuleKind::kPeTile, "K = {} partitions exceed the {}-row tile", k, p.tile_rows);
  if (!columns) return;
  if (!contains(t.col_tile_sizes, p.tile_cols) || p.tile_col % kTileQuantum != 0 ||
      p.tile_col < 0 || p.tile_col + p.tile_cols > t.pe_cols)
    c.report(RuleKind::kPeTile,
             "column tile {}+{} not allowed (sizes {}, positions in 32s, {} "
             "columns)",
             p.tile_col, p.tile_cols, fmt::join(t.col_tile_sizes, "/"), t.pe_cols);
  else if (m > p.tile_cols && p.tile_cols < t.pe_cols)
    c.report(RuleKind::kPeTile, "M = {} exceeds the {}-column tile", m, p.tile_cols);
  if (p.perf_mode == MatmulPerfMode::kDoubleRowFp8 && p.tile_cols != t.pe_cols)
    c.report(RuleKind::kPeTile, "double_row cannot be combined with column tiling");
}

// Free elements of a TensorE input, with the double-row K split (the most-major free dim of
// size 2) taken out. Reports when the split is missing.
int64_t free_without_double_row(Context& c, int i) {
  const AccessPattern& a = c.operand(i);
  if (c.inst->p.perf_mode != MatmulPerfMode::kDoubleRowFp8) return a.free_elements();
  if (!has_feature(c.core, Feature::kDoubleRowFp8))
    c.report(RuleKind::kFeature, "perf_mode=double_row needs {}, which {} does not have",
             kFeatureNames.name(Feature::kDoubleRowFp8), c.core.name);
  if (!is_fp8(a.dtype))
    c.report(RuleKind::kDtype, "{} is {}; double_row takes FP8 inputs", operand_label(*c.inst, i),
             a.dtype.name());
  if (a.ndim < 1 || a.dims[0].size != 2) {
    c.report(RuleKind::kShape,
             "{}: double_row needs the most-major free dim of size 2 "
             "(K = 2 x partitions)",
             operand_label(*c.inst, i));
  }
  return a.free_elements() / 2;
}

void k_limit(Context& c, int i) {
  const auto& lim = c.core.tensor.limits;
  const int64_t k = c.operand(i).num_partitions;
  if (c.inst->p.perf_mode == MatmulPerfMode::kDoubleRowFp8) {
    // Without the feature (no limit in the spec) the feature rule has already reported it.
    if (lim.fp8_double_row_k_max) limit(c, "K (double_row)", 2 * k, *lim.fp8_double_row_k_max);
  } else {
    limit(c, "K", k, lim.k_max);
  }
}

void load_stationary(Context& c, std::optional<Stationary>& st) {
  const AccessPattern& s = c.operand(0);
  const int64_t m = free_without_double_row(c, 0);
  k_limit(c, 0);
  limit(c, "M (stationary free size)", m, c.core.tensor.limits.m_max);
  tile(c, s.num_partitions, m, true);
  st = Stationary{s.num_partitions, m, s.dtype, c.inst->p.perf_mode};
}

void multiply_moving(Context& c, const std::optional<Stationary>& st) {
  const AccessPattern &dst = c.operand(0), &mov = c.operand(1);
  const auto& lim = c.core.tensor.limits;
  const int64_t n = free_without_double_row(c, 1);
  k_limit(c, 1);
  const bool bf16 = dst.dtype.dtype == Dtype::kBf16;
  limit(c, bf16 ? "N (bf16 result)" : "N (fp32 result)", n,
        bf16 ? lim.n_max_bf16_psum.value_or(lim.n_max_fp32_psum) : lim.n_max_fp32_psum);
  limit(c, "M (result partitions)", dst.num_partitions, lim.m_max);
  if (dst.free_elements() != n)
    c.report(RuleKind::kShape, "dst has {} elements per partition; moving gives N = {}",
             dst.free_elements(), n);
  psum_result(c, 0);
  tile(c, mov.num_partitions, dst.num_partitions, true);
  if (!st) {
    c.report(RuleKind::kShape, "no load_stationary before it in the pe stream");
    return;
  }
  if (mov.num_partitions != st->partitions)
    c.report(RuleKind::kShape, "moving has K = {} partitions, the stationary {}",
             mov.num_partitions, st->partitions);
  if (dst.num_partitions != st->m)
    c.report(RuleKind::kShape, "dst has {} partitions; the stationary's M is {}",
             dst.num_partitions, st->m);
  if (c.inst->p.perf_mode != st->perf_mode)
    c.report(RuleKind::kShape, "perf_mode differs from the load_stationary's");
  const num::Format &a = st->dtype, &b = mov.dtype;
  if (fp32_like(a) != fp32_like(b))
    c.report(RuleKind::kDtype,
             "stationary {} with moving {}: fp32/tf32 pair only with "
             "fp32/tf32",
             a.name(), b.name());
  const auto e4 = Dtype::kFp8E4M3, e4fn = Dtype::kFp8E4M3Fn;
  if ((a.dtype == e4 && b.dtype == e4fn) || (a.dtype == e4fn && b.dtype == e4))
    c.report(RuleKind::kDtype, "legacy fp8_e4m3 cannot be mixed with fp8_e4m3fn");
}

void matmul_mx(Context& c) {
  const auto& lim = c.core.tensor.limits;
  const AccessPattern &dst = c.operand(0), &sta = c.operand(1), &mov = c.operand(2);
  for (int i : {1, 2}) {
    const AccessPattern& a = c.operand(i);
    if (a.num_partitions % kTileQuantum != 0 || a.free_elements() % kMxPack != 0)
      c.report(RuleKind::kShape,
               "{} is {}; MX operands take partitions in 32s and x4 packed "
               "elements",
               operand_label(*c.inst, i), shape_text(a));
  }
  if (sta.num_partitions != mov.num_partitions)
    c.report(RuleKind::kShape, "stationary and moving partitions differ ({} vs {})",
             sta.num_partitions, mov.num_partitions);
  const int64_t m = sta.free_elements() / kMxPack, n = mov.free_elements() / kMxPack;
  // Without MX limits in the spec, the feature rule has already reported the op.
  if (lim.mx_k_max) limit(c, "K (MX)", kMxPack * int64_t{sta.num_partitions}, *lim.mx_k_max);
  limit(c, "M", m, lim.m_max);
  if (lim.mx_n_max) limit(c, "N (MX)", n, *lim.mx_n_max);
  if (m % 2 != 0) c.report(RuleKind::kMatmulShape, "M = {} must be even for MX matmul", m);
  if (dst.num_partitions != m || dst.free_elements() != n)
    c.report(RuleKind::kShape, "dst is {}; stationary and moving give [P={}, F={}]",
             shape_text(dst), m, n);
  for (auto [i, want] : {std::pair{3, m}, std::pair{4, n}})
    if (c.operand(i).free_elements() != want)
      c.report(RuleKind::kShape, "{} has {} scales per partition; expected {}",
               operand_label(*c.inst, i), c.operand(i).free_elements(), want);
  psum_result(c, 0);
  tile(c, sta.num_partitions, m, false);
}

void transpose_pe(Context& c) {
  const AccessPattern &dst = c.operand(0), &src = c.operand(1);
  const auto& t = c.core.tensor;
  limit(c, "src partitions", src.num_partitions, t.pe_rows);
  limit(c, "src elements per partition", src.free_elements(), t.pe_cols);
  if (dst.num_partitions != src.free_elements() || dst.free_elements() != src.num_partitions)
    c.report(RuleKind::kShape, "dst is {} but the transpose of src {} is [P={}, F={}]",
             shape_text(dst), shape_text(src), src.free_elements(), src.num_partitions);
  if (c.inst->p.transpose) {
    if (!has_feature(c.core, Feature::kBitExactTranspose))
      c.report(RuleKind::kFeature, "transpose=true needs {}, which {} does not have",
               kFeatureNames.name(Feature::kBitExactTranspose), c.core.name);
    // Bit-exact mode keeps 2- and 4-byte elements; FP8 lands in 16 bits (AG3).
    const int want = std::max<int>(2, src.dtype.storage_bytes);
    if (dst.dtype.storage_bytes != want)
      c.report(RuleKind::kDtype, "transpose=true writes {}-byte elements for {}; dst is {}", want,
               src.dtype.name(), dst.dtype.name());
    psum_result(c, 0, false);
    return;
  }
  if (!dtype_allowed(c, DtypeRule::kPsumOut, dst.dtype))
    c.report(RuleKind::kDtype, "dst is {}; a matmul result is fp32 or one of psum.dtypes",
             dst.dtype.name());
  psum_result(c, 0);
}

}  // namespace

void check_matmul(Context& c, std::optional<Stationary>& st) {
  switch (op_info(c.inst->op).shape) {
    case ShapeRule::kLoadStationary:
      load_stationary(c, st);
      break;
    case ShapeRule::kMultiplyMoving:
      multiply_moving(c, st);
      break;
    case ShapeRule::kMatmulMx:
      matmul_mx(c);
      break;
    case ShapeRule::kTransposePe:
      transpose_pe(c);
      break;
    default:
      break;
  }
}

}  // namespace trnsim::isa::detail
