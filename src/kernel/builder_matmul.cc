// TensorE calls: matmul (load_stationary + multiply_moving, accumulation groups) and transpose.
#include <fmt/format.h>

#include <algorithm>

#include "kernel/builder.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

namespace {

constexpr std::string_view kMatmul = "matmul";

// K of an operand: partitions, twice that in double-row mode.
int64_t contraction(const View& v, bool double_row) {
  return double_row ? 2 * v.partitions() : v.partitions();
}
int64_t free_size(const View& v, bool double_row) {
  return double_row ? v.free_elements() / 2 : v.free_elements();
}

}  // namespace

void KernelBuilder::close_groups(const View& v) {
  const Footprint f = footprint(v);
  for (size_t i = 0; i < groups_.size();) {
    Group& g = groups_[i];
    if (!(g.where.key == f.key && g.where.rect.overlaps(f.rect))) {
      ++i;
      continue;
    }
    // The group's last multiply_moving ends it: `whole` when it was also the first.
    isa::Instruction& mm = prog_.stream(g.last.stream)[static_cast<size_t>(g.last.index)];
    mm.p.acc = g.count == 1 ? isa::AccumulateFlag::kWhole : isa::AccumulateFlag::kLast;
    groups_.erase(groups_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

void KernelBuilder::close_all_groups() {
  while (!groups_.empty()) {
    Group& g = groups_.back();
    isa::Instruction& mm = prog_.stream(g.last.stream)[static_cast<size_t>(g.last.index)];
    mm.p.acc = g.count == 1 ? isa::AccumulateFlag::kWhole : isa::AccumulateFlag::kLast;
    groups_.pop_back();
  }
}

void KernelBuilder::matmul(const View& dst, const View& stationary, const View& moving,
                           MatmulOpts opts) {
  const auto& t = core_.tensor;
  const bool dr = opts.double_row;
  if (dst.space() != isa::Space::kPsum) call_error(kMatmul, "dst", dst, "a matmul writes PSUM");
  if (stationary.space() != isa::Space::kSbuf)
    call_error(kMatmul, "stationary", stationary, "TensorE reads SBUF only");
  if (moving.space() != isa::Space::kSbuf)
    call_error(kMatmul, "moving", moving, "TensorE reads SBUF only");
  if (dr && !core_.features.double_row_fp8)
    call_error(kMatmul, "stationary", stationary,
               fmt::format("double_row needs features.double_row_fp8, which {} ({}) does not have",
                           prog_.chip, core_.name));
  const int rows = opts.tile_rows > 0 ? opts.tile_rows : t.pe_rows;
  const int cols = opts.tile_cols > 0 ? opts.tile_cols : t.pe_cols;
  const int64_t k = contraction(stationary, dr), m = free_size(stationary, dr);
  const int64_t k_max = dr ? t.limits.fp8_double_row_k_max.value_or(t.limits.k_max)
                           : std::min<int64_t>(t.limits.k_max, rows);
  if (k > k_max)
    call_error(kMatmul, "stationary", stationary,
               fmt::format("K = {} ({}) exceeds {}, the contraction limit of {}{}", k,
                           dr ? "2 x its partitions" : "its partitions", k_max, prog_.chip,
                           opts.tile_rows ? " for this PE tile" : ""));
  if (contraction(moving, dr) != k)
    call_error(kMatmul, "moving", moving,
               fmt::format("K = {} partitions, but the stationary has K = {}",
                           contraction(moving, dr), k));
  if (m > std::min<int64_t>(t.limits.m_max, cols))
    call_error(kMatmul, "stationary", stationary,
               fmt::format("M = {} (its free size) exceeds {}", m,
                           std::min<int64_t>(t.limits.m_max, cols)));
  const bool bf16_dst = dst.dtype().dtype == num::Dtype::kBf16;
  const int64_t n = free_size(moving, dr);
  const int64_t n_max = bf16_dst ? t.limits.n_max_bf16_psum.value_or(t.limits.n_max_fp32_psum)
                                 : t.limits.n_max_fp32_psum;
  if (n > n_max)
    call_error(kMatmul, "moving", moving,
               fmt::format("N = {} (its free size) exceeds {} for a {} result on {}", n, n_max,
                           dst.dtype().name(), prog_.chip));
  if (dst.partitions() != m || dst.free_elements() != n)
    call_error(kMatmul, "dst", dst,
               fmt::format("is [{}, {}]; stationary [K={}, M={}] and moving [K={}, N={}] give "
                           "[{}, {}]",
                           dst.partitions(), dst.free_elements(), k, m, k, n, m, n));

  Group* group = accumulation_group(dst, opts.start);

  isa::Params tp;
  tp.tile_row = static_cast<int16_t>(opts.tile_row);
  tp.tile_col = static_cast<int16_t>(opts.tile_col);
  tp.tile_rows = static_cast<int16_t>(rows);
  tp.tile_cols = static_cast<int16_t>(cols);
  if (dr) tp.perf_mode = isa::MatmulPerfMode::kDoubleRowFp8;
  const std::vector<int> split = dr ? std::vector<int>{1} : std::vector<int>{};

  isa::Instruction ls;
  ls.op = isa::Opcode::kLoadStationary;
  ls.engine = isa::Engine::kTensor;
  ls.operands[0] = stationary.access(split);
  ls.num_operands = 1;
  ls.p = tp;
  // Back-to-back matmuls with one stationary load it once (while nothing overwrote it).
  if (!(stationary_ && *stationary_ == ls)) {
    emit(kMatmul, ls, {{stationary, false, "stationary"}}, true);
    stationary_ = ls;
    stationary_where_ = footprint(stationary);
  }

  isa::Instruction mm;
  mm.op = isa::Opcode::kMultiplyMoving;
  mm.engine = isa::Engine::kTensor;
  mm.operands[0] = dst.access();
  mm.operands[1] = moving.access(split);
  mm.num_operands = 2;
  mm.p = tp;
  mm.p.acc = group ? isa::AccumulateFlag::kMiddle : isa::AccumulateFlag::kFirst;
  // A continued group reads what it accumulates into; a new one only writes.
  std::vector<Use> uses{{dst, true, "dst"}, {moving, false, "moving"}};
  if (group) uses.push_back({dst, false, "dst"});
  const InstrRef ref{isa::Engine::kTensor,
                     static_cast<int32_t>(prog_.stream(isa::Engine::kTensor).size())};
  emit(kMatmul, std::move(mm), uses, true);
  note_accumulation(group, dst, ref);
}

KernelBuilder::Group* KernelBuilder::accumulation_group(const View& dst, bool start) {
  // Continue the open group at exactly this region, else start one.
  const Footprint where = footprint(dst);
  Group* group = nullptr;
  for (Group& g : groups_)
    if (g.where.key == where.key && g.where.rect == where.rect) group = &g;
  if (group && start) {
    close_groups(dst);
    group = nullptr;
  } else if (!group) {
    close_groups(dst);  // a group over part of this region ends here
  }
  return group;
}

void KernelBuilder::note_accumulation(Group* group, const View& dst, InstrRef ref) {
  if (group) {
    group->last = ref;
    ++group->count;
  } else {
    groups_.push_back({footprint(dst), ref, 1});
  }
}

void KernelBuilder::matmul_mx(const View& dst, const View& stationary, const View& moving,
                              const View& stationary_scale, const View& moving_scale,
                              MatmulOpts opts) {
  constexpr std::string_view kMx = "matmul_mx";
  if (dst.space() != isa::Space::kPsum) call_error(kMx, "dst", dst, "a matmul writes PSUM");
  for (const auto& [v, what] : {std::pair{&stationary, "stationary"},
                                {&moving, "moving"},
                                {&stationary_scale, "stationary_scale"},
                                {&moving_scale, "moving_scale"}})
    if (v->space() != isa::Space::kSbuf) call_error(kMx, what, *v, "TensorE reads SBUF only");
  if (opts.double_row)
    call_error(kMx, "stationary", stationary, "double_row is a mode of the FP8 matmul, not MX");
  if (opts.tile_cols != 0 && opts.tile_cols != core_.tensor.pe_cols)
    call_error(kMx, "stationary", stationary, "MX matmul tiles rows only (AG4)");
  // The PE array holds this stationary, not a cached one.
  stationary_.reset();
  stationary_where_.reset();
  Group* group = accumulation_group(dst, opts.start);
  isa::Params p;
  p.tile_row = static_cast<int16_t>(opts.tile_row);
  p.tile_rows = static_cast<int16_t>(opts.tile_rows > 0 ? opts.tile_rows : core_.tensor.pe_rows);
  p.acc = group ? isa::AccumulateFlag::kMiddle : isa::AccumulateFlag::kFirst;
  isa::Instruction mm;
  mm.op = isa::Opcode::kMatmulMx;
  mm.engine = isa::Engine::kTensor;
  mm.operands[0] = dst.access();
  mm.operands[1] = stationary.access();
  mm.operands[2] = moving.access();
  mm.operands[3] = stationary_scale.access();
  mm.operands[4] = moving_scale.access();
  mm.num_operands = 5;
  mm.p = p;
  // A continued group reads what it accumulates into; a new one only writes.
  std::vector<Use> uses{{dst, true, "dst"},
                        {stationary, false, "stationary"},
                        {moving, false, "moving"},
                        {stationary_scale, false, "stationary_scale"},
                        {moving_scale, false, "moving_scale"}};
  if (group) uses.push_back({dst, false, "dst"});
  const InstrRef ref{isa::Engine::kTensor,
                     static_cast<int32_t>(prog_.stream(isa::Engine::kTensor).size())};
  emit(kMx, std::move(mm), uses, true);
  note_accumulation(group, dst, ref);
}

void KernelBuilder::transpose(const View& dst, const View& src, isa::Engine engine) {
  if (engine == isa::Engine::kTensor) {
    if (dst.space() != isa::Space::kPsum)
      call_error("transpose", "dst", dst, "a TensorE transpose writes PSUM");
    // The PE array holds src while it transposes: the cached stationary is gone.
    stationary_.reset();
    stationary_where_.reset();
    // From NC-v3 the PE array has a bit-exact transpose mode, "2x faster for FP32" (AG3); the
    // compiler uses it where the result keeps the source's width (2- and 4-byte elements, FP8
    // into 16 bits); a bf16 source into an fp32 PSUM tile goes through the identity matmul.
    isa::Params p;
    p.transpose = core_.features.bit_exact_transpose &&
                  dst.dtype().storage_bytes == std::max<int>(2, src.dtype().storage_bytes);
    emit_op("transpose", isa::Opcode::kTransposePe, engine, {dst, src}, p);
    return;
  }
  emit_op("transpose", isa::Opcode::kTransposeDve, engine, {dst, src});
}

}  // namespace trnsim::kernel
