// The KangaRing patterns (INTRA "KangaRing Algorithm"): the ranks of a chip are paired, one
// of each pair is the primary and the other the secondary, and only the primaries form the
// cycle, so a cycle of n ranks has m = n/2 positions. The primary does all the data movement;
// channels alternate which member of a pair is primary, so each rank works in half of them.
// A position's segment is both members' blocks; seg(rank, emit) calls emit(Range) per piece
// of the block a rank owns on this channel.
//
// Reduce-scatter, steps k = 0..m-1 (INTRA "KangaRing ReduceScatter"):
//   k = 0: position p reduces its primary's and secondary's copies of segment (p-1) mod m and
//     writes the sum to the next primary's scratch (2R1W);
//   0 < k < m-1: position p reduces the partial sum it received, its own and its secondary's
//     copies of segment (p-k-1) mod m, writing to the next primary's scratch (3R1W);
//   k = m-1: position p reduces the partial sum of its own segment the same way and writes
//     each member's block to that member (3R1W; 2R1W when m = 1).
//   So segment q is summed starting at q+1: ((P+S) + P' + S') ..., each DMA's operands added
//   in fp32 and rounded once to the dtype (functional.h).
// All-gather, steps k = 0..m-1 (INTRA "KangaRing AllGather"):
//   k = 0: position p reads each member's block and writes it to the next primary and to the
//     other member (1R2W duplication; when m = 1 to the other member only);
//   0 < k < m-1: position p reads the segment it received at step k-1 and writes it to its
//     secondary and to the next primary (1R2W);
//   k = m-1: position p copies the segment it received last to its secondary (1R1W).
// Each has m steps against the ring's 2m-1: the per-hop latency is halved (INTRA).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fabric/plan.h"

namespace trnsim::fabric {

// The pairs of one channel: positions in cycle order, ranks offset by `base` (a server's first
// rank in hierarchical collectives).
struct KangaCycle {
  std::vector<int32_t> prim, sec;
  int32_t base = 0;
  int64_t m() const { return static_cast<int64_t>(prim.size()); }
  int32_t P(int64_t p) const { return base + prim[static_cast<size_t>(((p % m()) + m()) % m())]; }
  int32_t S(int64_t p) const { return base + sec[static_cast<size_t>(((p % m()) + m()) % m())]; }
};

// Pairs consecutive ranks of a ring order (a chip's ranks are consecutive in it); on channel
// c the lower-numbered rank of a pair is primary when c is even, the higher when c is odd.
inline KangaCycle kanga_cycle(const std::vector<int32_t>& order, size_t channel) {
  KangaCycle cy;
  for (size_t i = 0; i + 1 < order.size(); i += 2) {
    const int32_t lo = std::min(order[i], order[i + 1]), hi = std::max(order[i], order[i + 1]);
    cy.prim.push_back(channel % 2 == 0 ? lo : hi);
    cy.sec.push_back(channel % 2 == 0 ? hi : lo);
  }
  return cy;
}

template <typename SegFn>
void kanga_rs_step(const KangaCycle& cy, int64_t k, const SegFn& seg, std::vector<Transfer>& out) {
  const int64_t m = cy.m();
  for (int64_t p = 0; p < m; ++p) {
    const bool last = k == m - 1;
    const int64_t q = last ? p : p - k - 1;
    for (int32_t owner : {cy.P(q), cy.S(q)}) {
      seg(owner, [&](Range r) {
        Transfer x{cy.P(p), last ? owner : cy.P(p + 1),  r.off, r.off, r.len,
                   0,       last ? uint8_t{0} : kScratch};
        if (k == 0) {
          x.src2 = cy.S(p);
        } else {
          x.src_buf = kScratch;  // the partial sum received at step k-1
          x.src2 = cy.P(p);
          x.src3 = cy.S(p);
        }
        x.by = cy.P(p);
        out.push_back(x);
      });
    }
  }
}

template <typename SegFn>
void kanga_ag_step(const KangaCycle& cy, int64_t k, const SegFn& seg, std::vector<Transfer>& out) {
  const int64_t m = cy.m();
  for (int64_t p = 0; p < m; ++p) {
    if (k == 0) {
      for (int32_t r : {cy.P(p), cy.S(p)}) {
        const int32_t other = r == cy.P(p) ? cy.S(p) : cy.P(p);
        seg(r, [&](Range g) {
          Transfer x{r, m > 1 ? cy.P(p + 1) : other, g.off, g.off, g.len};
          if (m > 1) x.dst2 = other;
          x.by = cy.P(p);
          out.push_back(x);
        });
      }
      continue;
    }
    const int64_t q = p - k;  // received at step k-1
    for (int32_t owner : {cy.P(q), cy.S(q)}) {
      seg(owner, [&](Range g) {
        Transfer x{cy.P(p), k == m - 1 ? cy.S(p) : cy.P(p + 1), g.off, g.off, g.len};
        if (k < m - 1) x.dst2 = cy.S(p);
        out.push_back(x);
      });
    }
  }
}

// The m steps of a KangaRing pattern as phases: the first and last steps differ from the
// middle ones (operands, destinations), which repeat one pattern (uniform, folded in time).
inline void kanga_phases(const std::string& name, int64_t m,
                         std::function<void(int64_t, std::vector<Transfer>&)> step,
                         std::vector<Phase>& out) {
  out.push_back({name + " first", 1, true, [step](int64_t, auto& o) { step(0, o); }});
  if (m > 2) out.push_back({name, m - 2, true, [step](int64_t k, auto& o) { step(k + 1, o); }});
  if (m > 1)
    out.push_back({name + " last", 1, true, [step, m](int64_t, auto& o) { step(m - 1, o); }});
}

}  // namespace trnsim::fabric
