// The indexed DepTracker against the plain one it replaced (every part scanned on every
// access, kept here as the reference): the same dependencies for random accesses on chip and in
// HBM, and a tile-by-tile walk over a large tensor that stays linear.
#include "kernel/dep_tracker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace trnsim::kernel {
namespace {

// The reference: parts in a vector, scanned linearly (the tracker before it was indexed).
class LinearTracker {
 public:
  void conflicts(const Footprint& f, bool write, std::vector<AgentSeq>& out) const {
    auto it = regions_.find(f.key);
    if (it == regions_.end()) return;
    for (const Seg& s : it->second) {
      if (!s.rect.overlaps(f.rect)) continue;
      if (s.writer.agent >= 0) out.push_back(s.writer);
      if (write) out.insert(out.end(), s.readers.begin(), s.readers.end());
    }
  }
  void record(const Footprint& f, bool write, AgentSeq who) {
    auto [it, fresh] = regions_.try_emplace(f.key);
    if (fresh) it->second.push_back({kEverywhere, {}, {}});
    std::vector<Seg>& segs = it->second;
    std::vector<Seg> keep;
    for (Seg& s : segs) {
      if (!s.rect.overlaps(f.rect)) {
        keep.push_back(std::move(s));
        continue;
      }
      for (const Rect& r : subtract(s.rect, f.rect)) keep.push_back({r, s.writer, s.readers});
      if (!write) {
        Seg inside{s.rect.intersect(f.rect), s.writer, s.readers};
        add_reader(inside.readers, who);
        keep.push_back(std::move(inside));
      }
    }
    if (write) keep.push_back({f.rect, who, {}});
    segs = std::move(keep);
  }

 private:
  struct Seg {
    Rect rect;
    AgentSeq writer;
    std::vector<AgentSeq> readers;
  };
  static std::vector<Rect> subtract(const Rect& a, const Rect& b) {
    std::vector<Rect> out;
    if (b.p0 > a.p0) out.push_back({a.p0, b.p0, a.b0, a.b1});
    if (b.p1 < a.p1) out.push_back({b.p1, a.p1, a.b0, a.b1});
    const int64_t p0 = std::max(a.p0, b.p0), p1 = std::min(a.p1, b.p1);
    if (b.b0 > a.b0) out.push_back({p0, p1, a.b0, b.b0});
    if (b.b1 < a.b1) out.push_back({p0, p1, b.b1, a.b1});
    return out;
  }
  static void add_reader(std::vector<AgentSeq>& readers, AgentSeq who) {
    for (AgentSeq& r : readers)
      if (r.agent == who.agent) {
        r.seq = std::max(r.seq, who.seq);
        return;
      }
    readers.push_back(who);
  }
  std::map<RegionKey, std::vector<Seg>> regions_;
};

// What SyncResolver makes of a dependency list: the latest instruction per agent.
std::map<int32_t, int32_t> latest(const std::vector<AgentSeq>& deps) {
  std::map<int32_t, int32_t> m;
  for (const AgentSeq& d : deps) m[d.agent] = std::max(m.count(d.agent) ? m[d.agent] : -1, d.seq);
  return m;
}

TEST(DepTracker, SameDependenciesAsTheLinearTracker) {
  std::mt19937_64 rng(20261124);
  for (int trial = 0; trial < 20; ++trial) {
    DepTracker fast;
    LinearTracker slow;
    std::vector<int32_t> seq(8, 0);
    for (int i = 0; i < 400; ++i) {
      Footprint f;
      const int kind = static_cast<int>(rng() % 3);
      f.key.space = kind == 0   ? isa::Space::kHbm
                    : kind == 1 ? isa::Space::kSbuf
                                : isa::Space::kPsum;
      f.key.tensor = kind == 0 ? static_cast<int32_t>(rng() % 2) : -1;
      // Small coordinates so that accesses overlap often; now and then a tall or wide one.
      const int64_t rows = kind == 0 ? 300 : 128, bytes = kind == 0 ? 512 : 4096;
      f.rect.p0 = static_cast<int64_t>(rng() % rows);
      f.rect.p1 = f.rect.p0 + 1 + static_cast<int64_t>(rng() % (rng() % 8 == 0 ? rows : 32));
      f.rect.b0 = static_cast<int64_t>(rng() % bytes) & ~int64_t{3};
      f.rect.b1 = f.rect.b0 + 4 +
                  (static_cast<int64_t>(rng() % (rng() % 8 == 0 ? bytes : 256)) & ~int64_t{3});
      const bool write = rng() % 2 == 0;
      std::vector<AgentSeq> a, b;
      fast.conflicts(f, write, a);
      slow.conflicts(f, write, b);
      ASSERT_EQ(latest(a), latest(b)) << "trial " << trial << " access " << i;
      const auto agent = static_cast<int32_t>(rng() % seq.size());
      const AgentSeq who{agent, seq[static_cast<size_t>(agent)]++};
      fast.record(f, write, who);
      slow.record(f, write, who);
    }
  }
}

// A kernel walking a tall HBM tensor tile by tile (read a row block, write the same rows of
// another tensor): each access finds only the parts within reach, so 100,000 tiles are quick
// (with every part scanned per access this test ran into ctest's timeout; speed itself is
// measured in bench/, not here). The parts left behind are one per row block and tensor.
TEST(DepTracker, TileWalkOverALargeTensor) {
  DepTracker t;
  std::vector<AgentSeq> deps;
  for (int32_t i = 0; i < 100000; ++i) {
    const Footprint in{{isa::Space::kHbm, 0}, {128 * i, 128 * (i + 1), 0, 4}};
    const Footprint out{{isa::Space::kHbm, 1}, {128 * i, 128 * (i + 1), 0, 4}};
    const Footprint tile{{isa::Space::kSbuf, -1}, {0, 128, 0, 4}};
    deps.clear();
    t.conflicts(in, false, deps);
    t.conflicts(tile, true, deps);
    t.record(in, false, {0, i});
    t.record(tile, true, {0, i});
    deps.clear();
    t.conflicts(tile, false, deps);
    t.conflicts(out, true, deps);
    t.record(tile, false, {1, i});
    t.record(out, true, {1, i});
  }
  // Per tensor: one part per row block, plus what is left of the never-written space (the
  // rows below and the bytes beside); on chip: the tile, and what surrounds it.
  EXPECT_LE(t.segments(), size_t{2 * 100000 * 2 + 16});
  deps.clear();
  t.conflicts({{isa::Space::kHbm, 1}, {128 * 500, 128 * 501, 0, 4}}, false, deps);
  ASSERT_EQ(deps.size(), 1u);
  EXPECT_EQ(deps[0], (AgentSeq{1, 500}));
}

}  // namespace
}  // namespace trnsim::kernel
