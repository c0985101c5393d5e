#include "core/race/race_footprint.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "base/int128.h"
#include "core/cost/cost.h"
#include "core/dma/dma_plan.h"
#include "isa/access_rules.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {

using isa::AccessPattern;

struct Run {
  int64_t lo, hi;  // bytes from the operand's base in one partition or row
};

// How a DMA's elements spread over its pieces: element i of an operand of N elements goes with
// row i * R / N of the split side (R rows), which piece k moves when cuts[k] <= row < cuts[k+1].
struct Pieces {
  int64_t rows = 1;
  std::vector<int64_t> cuts{0};
  std::vector<int32_t> rings;

  size_t piece_of(int64_t element, int64_t n) const {
    const auto row = static_cast<int64_t>(int128{element} * rows / n);
    return static_cast<size_t>(std::upper_bound(cuts.begin(), cuts.end(), row) - cuts.begin() - 1);
  }
  // The first element of piece k.
  int64_t start_of(size_t k, int64_t n) const {
    return static_cast<int64_t>((int128{cuts[k]} * n + rows - 1) / rows);
  }
};

Pieces pieces_of(const isa::Instruction& in, const arch::CoreSpec& core) {
  const DmaPlan plan = plan_dma(in, core);
  const AccessPattern &d = in.operands[0], &s = in.operands[1];
  const AccessPattern& split = d.space != isa::Space::kHbm   ? d
                               : s.space != isa::Space::kHbm ? s
                                                             : d;
  Pieces p;
  p.rows = std::max<int64_t>(split.num_partitions, 1);
  for (int32_t k = 0; k < plan.num_pieces; ++k) {
    const DmaPiece piece = plan.piece(k);
    p.cuts.push_back(p.cuts.back() + piece.rows);
    p.rings.push_back(piece.engine * std::max(core.dma.queues_per_engine, 1) + plan.queue);
  }
  return p;
}

// Elements per partition, saturated (four dims of 65535 overflow int64).
int64_t free_elements(const AccessPattern& ap) {
  int64_t n = 1;
  for (int d = 0; d < ap.ndim; ++d) {
    const int64_t size = std::max<int64_t>(ap.dims[d].size, 0);
    n = size != 0 && n > INT64_MAX / size ? INT64_MAX : n * size;
  }
  return n;
}

// Element offsets of one partition's free pattern in iteration order (outermost dim first),
// or sorted without repeats (so bounded by the pattern's span however often it repeats).
std::vector<int64_t> offsets(const AccessPattern& ap, bool distinct) {
  std::vector<int64_t> out{0};
  for (int d = 0; d < ap.ndim; ++d) {
    const isa::FreeDim& dim = ap.dims[static_cast<size_t>(d)];
    std::vector<int64_t> next;
    next.reserve(out.size() * static_cast<size_t>(std::max<int64_t>(dim.size, 0)));
    for (int64_t o : out)
      for (int64_t i = 0; i < dim.size; ++i) next.push_back(o + i * dim.stride);
    if (distinct) {
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
    }
    out.swap(next);
  }
  return out;
}

std::vector<Run> runs_of(std::vector<int64_t> elems, int64_t es) {
  std::sort(elems.begin(), elems.end());
  elems.erase(std::unique(elems.begin(), elems.end()), elems.end());
  std::vector<Run> runs;
  for (int64_t e : elems) {
    if (!runs.empty() && runs.back().hi == e * es)
      runs.back().hi += es;
    else
      runs.push_back({e * es, e * es + es});
  }
  return runs;
}

// Joins rectangles that continue each other (same space, access and ring): the same bytes in
// the next partition on chip, the next bytes in HBM.
void merge(std::vector<ByteRect>& out, size_t from) {
  const auto key = [](const ByteRect& r) {
    return std::tie(r.space, r.write, r.ring, r.lo, r.hi, r.part_first);
  };
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(from), out.end(),
            [&](const ByteRect& a, const ByteRect& b) { return key(a) < key(b); });
  size_t kept = from;
  for (size_t i = from; i < out.size(); ++i) {
    const ByteRect r = out[i];
    ByteRect* last = kept > from ? &out[kept - 1] : nullptr;
    if (last &&
        std::tie(last->space, last->write, last->ring) == std::tie(r.space, r.write, r.ring)) {
      if (r.space == isa::Space::kHbm && r.lo <= last->hi) {
        last->hi = std::max(last->hi, r.hi);
        continue;
      }
      if (r.space != isa::Space::kHbm && r.lo == last->lo && r.hi == last->hi &&
          r.part_first <= last->part_last + 1) {
        last->part_last = std::max(last->part_last, r.part_last);
        continue;
      }
    }
    out[kept++] = r;
  }
  out.resize(kept);
}

void add_operand(const AccessPattern& ap, bool write, const Pieces* dma,
                 std::vector<ByteRect>& out) {
  const size_t from = out.size();
  const bool hbm = ap.space == isa::Space::kHbm;
  const int64_t es = ap.dtype.storage_bytes;
  const auto emit = [&](int64_t p, int64_t parts, const std::vector<Run>& runs, int32_t ring) {
    const int64_t base = hbm ? ap.offset + p * ap.partition_stride * es : ap.offset;
    const auto part = static_cast<int32_t>(hbm ? 0 : ap.start_partition + p);
    const auto last = static_cast<int32_t>(hbm ? 0 : part + parts - 1);
    for (const Run& r : runs)
      out.push_back({ap.space, write, part, last, base + r.lo, base + r.hi, ring});
  };
  const std::vector<Run> runs = runs_of(offsets(ap, true), es);
  if (dma == nullptr || dma->rings.empty()) {
    if (!hbm) emit(0, ap.num_partitions, runs, -1);
    for (int64_t p = 0; hbm && p < ap.num_partitions; ++p) emit(p, 1, runs, -1);
    merge(out, from);
    return;
  }
  const int64_t f = free_elements(ap), n = std::max<int64_t>(f * ap.num_partitions, 1);
  std::optional<std::vector<int64_t>> in_order;  // only when a row spans pieces
  for (int64_t p = 0; p < ap.num_partitions; ++p) {
    const size_t k0 = dma->piece_of(p * f, n), k1 = dma->piece_of(p * f + f - 1, n);
    if (k0 == k1) {
      emit(p, 1, runs, dma->rings[k0]);
      continue;
    }
    if (!in_order) in_order = offsets(ap, false);
    for (size_t k = k0; k <= k1; ++k) {
      const int64_t j0 = std::max(dma->start_of(k, n), p * f) - p * f;
      const int64_t j1 = (k == k1 ? p * f + f : dma->start_of(k + 1, n)) - p * f;
      emit(p, 1, runs_of({in_order->begin() + j0, in_order->begin() + j1}, es), dma->rings[k]);
    }
  }
  merge(out, from);
}

// The table an indirect DMA indexes (dma_gather's src, dma_scatter's dst): which rows move,
// and on which piece, depends on offsets read at run time, so every row of the table counts
// as touched by every piece (ring) of the transfer. Conservative: two indirect transfers on
// one queue still race where they share a row, as their pieces may take it on different
// engines.
void add_table(const AccessPattern& ap, bool write, const Pieces& dma, std::vector<ByteRect>& out) {
  const size_t from = out.size();
  const int64_t es = ap.dtype.storage_bytes;
  const std::vector<Run> runs = runs_of(offsets(ap, true), es);
  const std::vector<int32_t> rings = dma.rings.empty() ? std::vector<int32_t>{-1} : dma.rings;
  for (int32_t ring : rings)
    for (int64_t p = 0; p < ap.num_partitions; ++p) {
      const int64_t base = ap.offset + p * ap.partition_stride * es;
      for (const Run& r : runs)
        out.push_back({ap.space, write, 0, 0, base + r.lo, base + r.hi, ring});
    }
  merge(out, from);
}

// A dynamic operand (isa/access_pattern.h): which bytes it touches depends on a register the
// checker may not know (reg_load), so every byte between the lowest and highest it can reach
// counts, on every ring of a DMA. Conservative, like the indirect tables above.
void add_dynamic(const AccessPattern& ap, bool write, const Pieces* dma,
                 std::vector<ByteRect>& out) {
  const isa::ByteExtent a = isa::byte_extent(ap.at(0)), b = isa::byte_extent(ap.at(ap.dyn_max));
  const auto lo = static_cast<int64_t>(std::min(a.lo, b.lo));
  const auto hi = static_cast<int64_t>(std::max(a.hi, b.hi));
  const bool hbm = ap.space == isa::Space::kHbm;
  const auto part = static_cast<int32_t>(hbm ? 0 : ap.start_partition);
  const auto last = static_cast<int32_t>(hbm ? 0 : ap.start_partition + ap.num_partitions - 1);
  const std::vector<int32_t> rings =
      dma == nullptr || dma->rings.empty() ? std::vector<int32_t>{-1} : dma->rings;
  for (int32_t ring : rings) out.push_back({ap.space, write, part, last, lo, hi, ring});
}

}  // namespace

bool footprint(const isa::Instruction& in, const arch::CoreSpec& core, int64_t max_elements,
               std::vector<ByteRect>& out) {
  const size_t mark = out.size();
  std::optional<Pieces> dma;
  if (isa::is_dma(in.op) && in.num_operands >= 2) dma = pieces_of(in, core);
  for (int k = 0; k < in.num_operands; ++k) {
    const AccessPattern& ap = in.operands[static_cast<size_t>(k)];
    if (free_elements(ap) > max_elements) {
      out.resize(mark);
      return false;
    }
    const bool write = isa::operand_role(in.op, k).access == isa::Access::kWrite;
    if (ap.dynamic())
      add_dynamic(ap, write, dma ? &*dma : nullptr, out);
    else if (dma && is_indirect_dma(in.op) && ap.space == isa::Space::kHbm)
      add_table(ap, write, *dma, out);
    else
      add_operand(ap, write, dma ? &*dma : nullptr, out);
    if (static_cast<int64_t>(out.size() - mark) > max_elements) {
      out.resize(mark);
      return false;
    }
  }
  return true;
}

std::vector<ByteRect> without_rings(std::vector<ByteRect> rects) {
  for (ByteRect& r : rects) r.ring = -1;
  merge(rects, 0);
  return rects;
}

}  // namespace trnsim::core
