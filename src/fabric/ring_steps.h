// The two ring patterns every ring-based algorithm is made of. A ring is an order of ranks;
// position p sends to position p+1 (mod m). seg(j) is the segment that position j owns when a
// reduce-scatter ends (and the one it contributes to an all-gather).
//   reduce-scatter step k (0..m-2): position p sends segment (p-k-1) mod m, the receiver adds
//     it to its own copy, so after m-1 steps position p holds the full sum of segment p, added
//     in ring order starting at p+1;
//   all-gather step k (0..m-2): position p sends segment (p-k) mod m, copied.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/plan.h"

namespace trnsim::fabric {

template <typename Order, typename SegFn>
void ring_rs_step(const Order& order, int64_t k, const SegFn& seg, std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  for (int64_t p = 0; p < m; ++p) {
    const Range r = seg(((p - k - 1) % m + m) % m);
    out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[(p + 1) % m]), r.off,
                   r.off, r.len, 0, 0, true});
  }
}

template <typename Order, typename SegFn>
void ring_ag_step(const Order& order, int64_t k, const SegFn& seg, std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  for (int64_t p = 0; p < m; ++p) {
    const Range r = seg(((p - k) % m + m) % m);
    out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[(p + 1) % m]), r.off,
                   r.off, r.len, 0, 0, false});
  }
}

// Slice c of C of a range.
inline Range slice(Range r, int64_t parts, int64_t c) {
  const Range s = block_range(r.len, parts, c);
  return {r.off + s.off, s.len};
}

}  // namespace trnsim::fabric
