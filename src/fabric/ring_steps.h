// The two ring patterns every ring-based algorithm is made of. A ring is an order of ranks;
// position p sends to position p+1 (mod m). seg(j) is the segment that position j owns when a
// reduce-scatter ends (and the one it contributes to an all-gather): a Range, or a function
// seg(j, emit) that calls emit(Range) per piece (see Pieces).
//   reduce-scatter step k (0..m-2): position p sends segment (p-k-1) mod m, the receiver adds
//     it to its own copy, so after m-1 steps position p holds the full sum of segment p, added
//     in ring order starting at p+1;
//   all-gather step k (0..m-2): position p sends segment (p-k) mod m, copied.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "fabric/plan.h"

namespace trnsim::fabric {

// Collects a transfer's pieces: consecutive ranges merge into one; with `sizes_only` (timing,
// Context::sizes_only) every piece merges into one range of the total length. Zero-length
// pieces count only when nothing else does, so a step keeps its transfers (and latency).
template <typename Emit>
class Pieces {
 public:
  Pieces(bool sizes_only, Emit emit) : sizes_only_(sizes_only), emit_(std::forward<Emit>(emit)) {}
  void add(Range r) {
    if (r.len == 0) {
      if (!zero_) empty_ = r;
      zero_ = true;
      return;
    }
    if (have_ && (sizes_only_ || cur_.off + cur_.len == r.off)) {
      cur_.len += r.len;
      return;
    }
    if (have_) emit_(cur_);
    cur_ = r;
    have_ = true;
  }
  void flush() {
    if (have_) {
      emit_(cur_);
    } else if (zero_) {
      emit_(empty_);
    }
    have_ = zero_ = false;
  }

 private:
  bool sizes_only_, have_ = false, zero_ = false;
  Emit emit_;
  Range cur_{0, 0}, empty_{0, 0};
};

// Calls emit(Range) for each piece of segment j.
template <typename SegFn, typename Emit>
void each_piece(const SegFn& seg, int64_t j, Emit&& emit) {
  if constexpr (std::is_invocable_r_v<Range, const SegFn&, int64_t>) {
    emit(seg(j));
  } else {
    seg(j, emit);
  }
}

template <typename Order, typename SegFn>
void ring_rs_step(const Order& order, int64_t k, const SegFn& seg, std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  for (int64_t p = 0; p < m; ++p) {
    each_piece(seg, ((p - k - 1) % m + m) % m, [&](Range r) {
      out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[(p + 1) % m]),
                     r.off, r.off, r.len, 0, 0, true});
    });
  }
}

template <typename Order, typename SegFn>
void ring_ag_step(const Order& order, int64_t k, const SegFn& seg, std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  for (int64_t p = 0; p < m; ++p) {
    each_piece(seg, ((p - k) % m + m) % m, [&](Range r) {
      out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[(p + 1) % m]),
                     r.off, r.off, r.len, 0, 0, false});
    });
  }
}

// Slice c of C of a range.
inline Range slice(Range r, int64_t parts, int64_t c) {
  const Range s = block_range(r.len, parts, c);
  return {r.off + s.off, s.len};
}

}  // namespace trnsim::fabric
