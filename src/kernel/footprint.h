// Where a view's elements lie, as one rectangle that contains them all (a conservative
// superset: two views that do not overlap may still get overlapping rectangles, which costs
// at most an extra wait, never a missed one).
//   - SBUF / PSUM: partitions x bytes within a partition;
//   - HBM: rows of the tensor's outermost dim x bytes within a row, per tensor, so that
//     column blocks of a matrix ([rows, n0:n1]) do not collide with each other.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

#include "isa/access_pattern.h"
#include "kernel/view.h"

namespace trnsim::kernel {

struct RegionKey {
  isa::Space space = isa::Space::kSbuf;
  int32_t tensor = -1;  // HBM: index into Program::tensors
  auto operator<=>(const RegionKey&) const = default;
};

struct Rect {
  int64_t p0 = 0, p1 = 0;  // partitions / rows, [p0, p1)
  int64_t b0 = 0, b1 = 0;  // bytes, [b0, b1)
  bool overlaps(const Rect& o) const { return p0 < o.p1 && o.p0 < p1 && b0 < o.b1 && o.b0 < b1; }
  bool contains(const Rect& o) const {
    return p0 <= o.p0 && o.p1 <= p1 && b0 <= o.b0 && o.b1 <= b1;
  }
  Rect intersect(const Rect& o) const {
    return {std::max(p0, o.p0), std::min(p1, o.p1), std::max(b0, o.b0), std::min(b1, o.b1)};
  }
  bool operator==(const Rect&) const = default;
};

inline constexpr Rect kEverywhere{0, std::numeric_limits<int64_t>::max() / 2, 0,
                                  std::numeric_limits<int64_t>::max() / 2};

struct Footprint {
  RegionKey key;
  Rect rect;
};

Footprint footprint(const View& v);

// Whether an on-chip view's free elements fill their footprint's bytes exactly, each once:
// its dims, ordered by |stride|, count as mixed-radix digits (stride 1, then each the product
// of the sizes below). A strided or repeating view (t[:, 0:8:7]) does not, so writing it
// leaves the bytes between its elements as they were.
bool fills_footprint(const View& v);

}  // namespace trnsim::kernel
