// A binomial tree over the m positions of an order (any m; the inter-server "tree" stage of
// hierarchical all-reduce): latency-optimal, 2 ceil(log2 m) steps, but every step moves the
// whole segment (no pipelining), so it suits small segments over many servers.
//   reduce step k (0..L-1): position p with p mod 2^(k+1) = 2^k sends its partial sum to
//     p - 2^k, which adds it: position 0 ends with the sum, added pairwise up the tree;
//   broadcast step k (0..L-1), level l = L-1-k: position p with p mod 2^(l+1) = 0 sends the
//     sum to p + 2^l when that exists.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/plan.h"

namespace trnsim::fabric {

template <typename Order, typename SegFn>
void tree_reduce_step(const Order& order, int64_t k, const SegFn& seg, std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  const int64_t d = int64_t{1} << k;
  for (int64_t p = d; p < m; p += 2 * d) {
    seg([&](Range r) {
      out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[p - d]), r.off,
                     r.off, r.len, 0, 0, true});
    });
  }
}

template <typename Order, typename SegFn>
void tree_broadcast_step(const Order& order, int64_t k, int64_t levels, const SegFn& seg,
                         std::vector<Transfer>& out) {
  const auto m = static_cast<int64_t>(order.size());
  const int64_t d = int64_t{1} << (levels - 1 - k);
  for (int64_t p = 0; p + d < m; p += 2 * d) {
    seg([&](Range r) {
      out.push_back({static_cast<int32_t>(order[p]), static_cast<int32_t>(order[p + d]), r.off,
                     r.off, r.len, 0, 0, false});
    });
  }
}

}  // namespace trnsim::fabric
