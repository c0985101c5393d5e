#include "kernel/dep_tracker.h"

#include <algorithm>
#include <limits>

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

DepTracker::Parts& DepTracker::region(const RegionKey& key) {
  auto [it, fresh] = regions_.try_emplace(key);
  // Start with one part that covers everything and was never written, so that reads of
  // memory nobody wrote (kernel inputs) are recorded for later writers.
  if (fresh) {
    it->second.by_rows = key.space == isa::Space::kHbm;
    insert(it->second, {kEverywhere, {}, {}});
  }
  return it->second;
}

void DepTracker::insert(Parts& parts, Seg s) {
  const int64_t extent = parts.hi(s.rect) - parts.lo(s.rect);
  if (extent > kWide) {
    parts.wide.push_back(std::move(s));
    return;
  }
  parts.narrow_extent = std::max(parts.narrow_extent, extent);
  const auto key = parts.key(s.rect);
  parts.narrow.emplace(key, std::move(s));
}

template <class P, class Fn>
void DepTracker::for_each_overlap(P& parts, const Rect& r, Fn&& fn) {
  for (auto& s : parts.wide)
    if (s.rect.overlaps(r)) fn(s);
  // A narrow part that overlaps r starts less than narrow_extent before r does.
  const int64_t from = parts.lo(r) - parts.narrow_extent + 1;
  for (auto it = parts.narrow.lower_bound({from, std::numeric_limits<int64_t>::min()});
       it != parts.narrow.end() && it->first.first < parts.hi(r); ++it)
    if (it->second.rect.overlaps(r)) fn(it->second);
}

std::vector<DepTracker::Seg> DepTracker::take_overlaps(Parts& parts, const Rect& r) {
  std::vector<Seg> out;
  std::erase_if(parts.wide, [&](Seg& s) {
    if (!s.rect.overlaps(r)) return false;
    out.push_back(std::move(s));
    return true;
  });
  const int64_t from = parts.lo(r) - parts.narrow_extent + 1;
  for (auto it = parts.narrow.lower_bound({from, std::numeric_limits<int64_t>::min()});
       it != parts.narrow.end() && it->first.first < parts.hi(r);) {
    if (it->second.rect.overlaps(r)) {
      out.push_back(std::move(it->second));
      it = parts.narrow.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void DepTracker::conflicts(const Footprint& f, bool write, std::vector<AgentSeq>& out) const {
  auto it = regions_.find(f.key);
  if (it == regions_.end()) return;
  for_each_overlap(it->second, f.rect, [&](const Seg& s) {
    if (s.writer.agent >= 0) out.push_back(s.writer);
    if (write) out.insert(out.end(), s.readers.begin(), s.readers.end());
  });
}

void DepTracker::record(const Footprint& f, bool write, AgentSeq who) {
  Parts& parts = region(f.key);
  // In place where the part lies wholly inside a read (the common case: the same tile again).
  bool cut = write;
  if (!write)
    for_each_overlap(parts, f.rect, [&](Seg& s) {
      if (f.rect.contains(s.rect))
        add_reader(s.readers, who);  // the part stays where it is
      else
        cut = true;
    });
  if (!cut) return;
  // The rest are cut: the parts outside f keep their history; for a read, the part inside
  // gains the reader; for a write, one part replaces everything inside f.
  std::vector<Rect> pieces;
  for (Seg& s : take_overlaps(parts, f.rect)) {
    if (!write && f.rect.contains(s.rect)) {  // already has the reader
      insert(parts, std::move(s));
      continue;
    }
    pieces.clear();
    subtract(s.rect, f.rect, pieces);
    for (const Rect& r : pieces) insert(parts, {r, s.writer, s.readers});
    if (!write) {
      Seg inside{s.rect.intersect(f.rect), s.writer, std::move(s.readers)};
      add_reader(inside.readers, who);
      insert(parts, std::move(inside));
    }
  }
  if (write) insert(parts, {f.rect, who, {}});
}

size_t DepTracker::segments() const {
  size_t n = 0;
  for (const auto& [key, parts] : regions_) n += parts.narrow.size() + parts.wide.size();
  return n;
}

}  // namespace trnsim::kernel
