// Memory dependencies between the instructions a kernel emits, per region of memory: the last
// writer of every part and the readers since it. An access conflicts with
//   - the last writer of what it reads (read after write, RAW),
//   - the last writer and the readers of what it writes (WAW, WAR).
// Parts are rectangles (footprint.h) split as accesses overlap them partially. Readers are
// kept as the latest instruction per agent: agents complete their instructions in order
// (sync_resolver.h), so waiting for the latest covers the earlier ones.
//
// A region's parts are disjoint, so they are indexed by where they start along the axis
// tiles spread over (HBM: rows of the tensor; SBUF and PSUM: bytes of a partition): an access
// looks only at the parts that start within reach of it, so a kernel that walks a large
// tensor tile by tile costs O(log parts) per access, not O(parts) (the builder was quadratic
// in the tiles of a tensor).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
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
  // Parts longer than this along the index axis (what is left of the never-written space,
  // which reaches to the end of the address space) are few and kept apart, so that the
  // lookup window stays the length of the longest narrow part.
  static constexpr int64_t kWide = int64_t{1} << 16;
  struct Parts {
    bool by_rows = false;  // HBM: index by rows (p); on chip: by bytes (b)
    std::map<std::pair<int64_t, int64_t>, Seg> narrow;  // by (start, other start)
    int64_t narrow_extent = 1;                          // the longest narrow part ever held
    std::vector<Seg> wide;
    int64_t lo(const Rect& r) const { return by_rows ? r.p0 : r.b0; }
    int64_t hi(const Rect& r) const { return by_rows ? r.p1 : r.b1; }
    std::pair<int64_t, int64_t> key(const Rect& r) const {
      return by_rows ? std::pair{r.p0, r.b0} : std::pair{r.b0, r.p0};
    }
  };
  Parts& region(const RegionKey& key);
  static void insert(Parts& parts, Seg s);
  // Calls fn(seg) for every part that overlaps `r` (P: Parts or const Parts).
  template <class P, class Fn>
  static void for_each_overlap(P& parts, const Rect& r, Fn&& fn);
  // Moves the parts that overlap `r` out of `parts`, in (p0, b0) order.
  static std::vector<Seg> take_overlaps(Parts& parts, const Rect& r);

  std::map<RegionKey, Parts> regions_;
};

}  // namespace trnsim::kernel
