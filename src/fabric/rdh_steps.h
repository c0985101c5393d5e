// Recursive halving and doubling (COLL "RDH", INTER after Thakur et al.) over m = 2^K
// positions of an order. parts(lo, hi, emit) calls emit(Range) per piece of the blocks that
// positions [lo, hi) own at the end of a reduce-scatter.
//   halving step s (0..K-1): distance d = m >> (s+1); position p's blocks before the step are
//     the 2d starting at (p / 2d) * 2d; it keeps the half on its side of the split and sends
//     the other half to p XOR d, which adds it. After K steps position p holds block p.
//   doubling step s (0..K-1): distance d = 1 << s; position p owns the d blocks starting at
//     (p / d) * d and sends them to p XOR d.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/plan.h"

namespace trnsim::fabric {

inline int64_t log2_ceil(int64_t n) {
  int64_t k = 0;
  while ((int64_t{1} << k) < n) ++k;
  return k;
}

template <typename Order, typename PartsFn>
void rdh_halving_step(const Order& order, int64_t s, const PartsFn& parts,
                      std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  const int64_t d = m >> (s + 1);
  for (int64_t p = 0; p < m; ++p) {
    const int64_t lo = (p / (2 * d)) * (2 * d);
    const bool upper = (p & d) != 0;
    parts(upper ? lo : lo + d, upper ? lo + d : lo + 2 * d, [&](Range r) {
      out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[p ^ d]), r.off,
                     r.off, r.len, 0, 0, true});
    });
  }
}

template <typename Order, typename PartsFn>
void rdh_doubling_step(const Order& order, int64_t s, const PartsFn& parts,
                       std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  const int64_t d = int64_t{1} << s;
  for (int64_t p = 0; p < m; ++p) {
    const int64_t lo = (p / d) * d;
    parts(lo, lo + d, [&](Range r) {
      out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[p ^ d]), r.off,
                     r.off, r.len, 0, 0, false});
    });
  }
}

}  // namespace trnsim::fabric
