// Memory dependencies between the instructions a kernel emits, per region of memory: the last
// writer of every part and the readers since it. An access conflicts with
//   - the last writer of what it reads (read after write, RAW),
//   - the last writer and the readers of what it writes (WAW, WAR).
// Parts are rectangles (footprint.h) split as accesses overlap them partially. Readers are
// kept as the latest instruction per agent: agents complete their instructions in order
// (sync_resolver.h), so waiting for the latest covers the earlier ones.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "kernel/footprint.h"

namespace trnsim::kernel {

// An instruction of an agent (an engine, or a DMA queue; sync_resolver.h): its number among
// the agent's instructions.
struct AgentSeq {
  int32_t agent = -1;
  int32_t seq = -1;
  bool operator==(const AgentSeq&) const = default;
};

class DepTracker {
 public:
  // Appends the instructions an access of `f` must wait for.
  void conflicts(const Footprint& f, bool write, std::vector<AgentSeq>& out) const;
  // Records the access by `who` (after conflicts() of all its operands).
  void record(const Footprint& f, bool write, AgentSeq who);
  size_t segments() const;

 private:
  struct Seg {
    Rect rect;
    AgentSeq writer;  // agent -1: never written
    std::vector<AgentSeq> readers;
  };
  std::vector<Seg>& region(const RegionKey& key);

  std::map<RegionKey, std::vector<Seg>> regions_;
};

}  // namespace trnsim::kernel
