// A set of DMA pieces that all stream at the same rate, timed in virtual time (a
// processor-sharing clock): `served` is the work one member has done since the class was
// created, advancing at `rate` per picosecond. A piece that starts with `work` to do finishes
// when `served` reaches served-at-start + work, so a rate change costs O(1) (advance the clock)
// instead of updating every running piece, and the next completion is the heap's smallest
// threshold. Work is bytes x 1e12 (so ps x bytes/s is exact integer arithmetic); the first
// picosecond at which the threshold is reached is the completion time, as if every piece's
// remaining work were updated at every rate change.
#pragma once

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

#include "base/int128.h"
#include "base/units.h"

namespace trnsim::core {

class DmaRateClass {
 public:
  // Brings the clock to `now` at the rate that held since the last call.
  void advance(Picoseconds now) {
    served_ += static_cast<uint128>((now - last_).v) * rate_;
    last_ = now;
  }
  // Takes effect from the last advance() on.
  void set_rate(uint64_t bytes_per_second) { rate_ = bytes_per_second; }

  // Adds a member with `work` (bytes x 1e12) still to do; `id` is returned by pop_done().
  void add(uint128 work, uint32_t id) { heap_.emplace(served_ + work, id); }
  bool empty() const { return heap_.empty(); }

  // The first picosecond at which the earliest member is done (INT64_MAX when none), given the
  // current rate. Valid right after advance().
  Picoseconds next_done() const {
    if (heap_.empty()) return Picoseconds(INT64_MAX);
    const uint128 left = heap_.top().first > served_ ? heap_.top().first - served_ : 0;
    const uint64_t r = rate_ ? rate_ : 1;
    const uint128 ps = left <= UINT64_MAX - r ? uint128{(static_cast<uint64_t>(left) + r - 1) / r}
                                              : (left + r - 1) / r;
    if (ps > static_cast<uint128>(INT64_MAX - last_.v)) return Picoseconds(INT64_MAX);
    return last_ + Picoseconds(static_cast<int64_t>(ps));
  }
  // Removes and returns a member whose work is done at the last advance() (false: none).
  // Members done at the same time come out in (threshold, id) order: deterministic.
  bool pop_done(uint32_t& id) {
    if (heap_.empty() || heap_.top().first > served_) return false;
    id = heap_.top().second;
    heap_.pop();
    return true;
  }

 private:
  using Entry = std::pair<uint128, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  uint128 served_ = 0;
  uint64_t rate_ = 1;
  Picoseconds last_{0};
};

}  // namespace trnsim::core
