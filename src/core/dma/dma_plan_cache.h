// DMA plans by shape, for TimingProgram: an unrolled kernel repeats a few DMA shapes thousands
// of times (the addresses differ, the plan does not), so each shape is planned once and its
// instructions share the plan. A small direct-mapped table: a miss (a new shape, or a
// collision) plans again, so a collision costs time, never a wrong plan.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/dma/dma_plan.h"

namespace trnsim::core {

class DmaPlanCache {
 public:
  // The index into `plans` of `shape`'s plan; a plan not in the table is computed and
  // appended (`added` tells which).
  int32_t find_or_add(const DmaShape& shape, const arch::CoreSpec& spec,
                      std::vector<DmaPlan>& plans, bool& added) {
    Slot& slot = slots_[hash(shape) % kSlots];
    added = slot.plan < 0 || !(slot.shape == shape);
    if (added) {
      slot.shape = shape;
      slot.plan = static_cast<int32_t>(plans.size());
      plans.push_back(plan_dma(shape, spec));
    }
    return slot.plan;
  }

 private:
  static constexpr size_t kSlots = 64;
  struct Slot {
    DmaShape shape;
    int32_t plan = -1;
  };

  static uint64_t hash(const DmaShape& s) {
    uint64_t h = static_cast<uint64_t>(s.dst_bytes) * 0x9e3779b97f4a7c15ull;
    h ^= static_cast<uint64_t>(s.src_bytes) + (h << 6) + (h >> 2);
    h ^= (static_cast<uint64_t>(s.dst_start_partition) << 32 | static_cast<uint32_t>(s.queue)) +
         (h << 6) + (h >> 2);
    h ^= (static_cast<uint64_t>(s.src_start_partition) << 32 |
          static_cast<uint32_t>(s.dst_partitions)) +
         (h << 6) + (h >> 2);
    return h ^ (h >> 29);
  }

  std::array<Slot, kSlots> slots_{};
};

}  // namespace trnsim::core
