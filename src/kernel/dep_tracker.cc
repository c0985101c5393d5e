#include "kernel/dep_tracker.h"

#include <algorithm>

namespace trnsim::kernel {

namespace {

// a minus b (b overlapping a), as up to four rectangles: the partitions above and below b,
// then the bytes left and right of b within b's partitions.
void subtract(const Rect& a, const Rect& b, std::vector<Rect>& out) {
  if (b.p0 > a.p0) out.push_back({a.p0, b.p0, a.b0, a.b1});
  if (b.p1 < a.p1) out.push_back({b.p1, a.p1, a.b0, a.b1});
  const int64_t p0 = std::max(a.p0, b.p0), p1 = std::min(a.p1, b.p1);
  if (b.b0 > a.b0) out.push_back({p0, p1, a.b0, b.b0});
  if (b.b1 < a.b1) out.push_back({p0, p1, b.b1, a.b1});
}

void add_reader(std::vector<AgentSeq>& readers, AgentSeq who) {
  for (AgentSeq& r : readers)
    if (r.agent == who.agent) {
      r.seq = std::max(r.seq, who.seq);
      return;
    }
  readers.push_back(who);
}

}  // namespace

std::vector<DepTracker::Seg>& DepTracker::region(const RegionKey& key) {
  auto [it, fresh] = regions_.try_emplace(key);
  // Start with one part that covers everything and was never written, so that reads of
  // memory nobody wrote (kernel inputs) are recorded for later writers.
  if (fresh) it->second.push_back({kEverywhere, {}, {}});
  return it->second;
}

void DepTracker::conflicts(const Footprint& f, bool write, std::vector<AgentSeq>& out) const {
  auto it = regions_.find(f.key);
  if (it == regions_.end()) return;
  for (const Seg& s : it->second) {
    if (!s.rect.overlaps(f.rect)) continue;
    if (s.writer.agent >= 0) out.push_back(s.writer);
    if (write) out.insert(out.end(), s.readers.begin(), s.readers.end());
  }
}

void DepTracker::record(const Footprint& f, bool write, AgentSeq who) {
  std::vector<Seg>& segs = region(f.key);
  std::vector<size_t> hits;
  for (size_t i = 0; i < segs.size(); ++i)
    if (segs[i].rect.overlaps(f.rect)) hits.push_back(i);
  // In place where the part lies wholly inside a read (the common case: the same tile again).
  if (!write)
    std::erase_if(hits, [&](size_t i) {
      if (!f.rect.contains(segs[i].rect)) return false;
      add_reader(segs[i].readers, who);
      return true;
    });
  // The rest are cut: the parts outside f keep their history; for a read, the part inside
  // gains the reader; for a write, one part replaces everything inside f. Removal swaps with
  // the last part, going down the indices so that no hit is moved before it is handled.
  std::vector<Seg> added;
  std::vector<Rect> pieces;
  for (auto it = hits.rbegin(); it != hits.rend(); ++it) {
    Seg s = std::move(segs[*it]);
    segs[*it] = std::move(segs.back());
    segs.pop_back();
    pieces.clear();
    subtract(s.rect, f.rect, pieces);
    for (const Rect& r : pieces) added.push_back({r, s.writer, s.readers});
    if (!write) {
      Seg inside{s.rect.intersect(f.rect), s.writer, std::move(s.readers)};
      add_reader(inside.readers, who);
      added.push_back(std::move(inside));
    }
  }
  for (Seg& s : added) segs.push_back(std::move(s));
  if (write) segs.push_back({f.rect, who, {}});
}

size_t DepTracker::segments() const {
  size_t n = 0;
  for (const auto& [key, segs] : regions_) n += segs.size();
  return n;
}

}  // namespace trnsim::kernel
