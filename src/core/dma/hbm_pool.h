// One HBM stack's bandwidth, shared by the DMA engines of the cores on that stack (HARDWARE.md
// s4, s6: a Trn2 stack serves the two physical cores of an LNC=2 logical core). Pieces that
// touch HBM share the pool fairly by weight (their HBM endpoints), across cores: when one
// core's weight changes, every member's HBM pieces change rate, so the pool brings every
// member's virtual-time clocks to `now` at the old rate before the change and re-divides the
// bandwidth after it. A single-core run has a pool of its own with one member.
#pragma once

#include <cstdint>
#include <vector>

#include "base/units.h"

namespace trnsim::core {

class DmaEngines;

class HbmPool {
 public:
  explicit HbmPool(uint64_t bytes_per_second) : rate_(bytes_per_second) {}

  // The rate one unit of weight gets now (the pool's whole rate when nothing runs).
  uint64_t share() const { return weight_ ? rate_ / weight_ : rate_; }

  void join(DmaEngines& member) { members_.push_back(&member); }
  // `member`'s weight changes from `before` to `after` at `now`.
  void reweigh(DmaEngines& member, uint64_t before, uint64_t after, Picoseconds now);

 private:
  uint64_t rate_;
  uint64_t weight_ = 0;  // HBM endpoints of all members' running pieces
  std::vector<DmaEngines*> members_;
};

}  // namespace trnsim::core
