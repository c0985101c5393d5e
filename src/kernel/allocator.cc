#include "kernel/allocator.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"

namespace trnsim::kernel {

ByteAllocator::ByteAllocator(std::string memory, int64_t capacity, int64_t alignment, int64_t bank)
    : memory_(std::move(memory)),
      capacity_(capacity),
      alignment_(std::max<int64_t>(alignment, 1)),
      bank_(bank) {
  if (capacity_ > 0) free_.push_back({0, capacity_});
}

std::optional<int64_t> ByteAllocator::fit(const Range& r, int64_t bytes) const {
  int64_t start = (r.start + alignment_ - 1) / alignment_ * alignment_;
  if (bank_ > 0) {
    const int64_t next_bank = (start / bank_ + 1) * bank_;
    // A small range must not straddle a bank; a large one starts on a bank boundary.
    if (bytes > bank_ ? start % bank_ != 0 : start + bytes > next_bank) start = next_bank;
  }
  if (start + bytes <= r.start + r.size) return start;
  return std::nullopt;
}

void ByteAllocator::take(size_t i, int64_t start, int64_t bytes, const std::string& owner) {
  const Range r = free_[i];
  free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
  // The parts of the free range before and after the allocation stay free.
  std::vector<Range> rest;
  if (start > r.start) rest.push_back({r.start, start - r.start});
  if (start + bytes < r.start + r.size)
    rest.push_back({start + bytes, r.start + r.size - (start + bytes)});
  free_.insert(free_.begin() + static_cast<std::ptrdiff_t>(i), rest.begin(), rest.end());
  live_.push_back({start, bytes, owner});
  rotor_ = start + bytes;
  // What is taken is no longer free: keep the parts of freed ranges outside it.
  const int64_t end = start + bytes;
  std::vector<Freed> kept;
  kept.reserve(freed_.size() + 1);
  for (const Freed& f : freed_) {
    if (f.end <= start || f.start >= end) {
      kept.push_back(f);
      continue;
    }
    if (f.start < start) kept.push_back({f.start, start, f.when});
    if (f.end > end) kept.push_back({end, f.end, f.when});
  }
  freed_ = std::move(kept);
}

std::optional<int64_t> ByteAllocator::fit_high(const Range& r, int64_t bytes) const {
  const int64_t start = (r.start + r.size - bytes) / alignment_ * alignment_;
  if (start >= r.start) return start;
  return std::nullopt;
}

uint64_t ByteAllocator::freed_when(int64_t start, int64_t bytes) const {
  uint64_t when = 0;
  for (const Freed& f : freed_)
    if (f.start < start + bytes && f.end > start) when = std::max(when, f.when);
  return when;
}

std::optional<std::pair<size_t, int64_t>> ByteAllocator::next_fit(int64_t bytes) const {
  // From the end of the last allocation on, wrapping around: the range holding the rotor is
  // tried from the rotor first, and last of all whole.
  const size_t n = free_.size();
  auto first = static_cast<size_t>(
      std::lower_bound(free_.begin(), free_.end(), rotor_,
                       [](const Range& r, int64_t at) { return r.start + r.size <= at; }) -
      free_.begin());
  if (first == n) first = 0;  // nothing free past the rotor: the ring starts over at 0
  for (size_t j = 0; j <= n && n > 0; ++j) {
    const size_t i = (first + j) % n;
    Range r = free_[i];
    if (j == 0 && r.start < rotor_ && rotor_ < r.start + r.size)
      r = {rotor_, r.start + r.size - rotor_};
    if (const std::optional<int64_t> s = fit(r, bytes)) return std::pair{i, *s};
  }
  return std::nullopt;
}

std::optional<int64_t> ByteAllocator::allocate(int64_t bytes, const std::string& owner, Fit how) {
  TRNSIM_ASSERT(bytes > 0);
  const size_t n = free_.size();
  if (how == Fit::kNext || how == Fit::kOldest) {
    auto pick = next_fit(bytes);
    if (!pick) return std::nullopt;
    const int64_t ring_start = pick->second;
    if (how == Fit::kOldest) {
      // Another placement whose bytes were all given back before some of the ring's choice
      // was: the one freed longest ago (ties: the lowest; placements at either end of each
      // free range, so that a range's freshly given back part can be stepped over).
      uint64_t best = freed_when(pick->second, bytes);
      for (size_t i = 0; i < n && best > 0; ++i)
        for (const std::optional<int64_t> s :
             {fit(free_[i], bytes), bank_ > 0 ? std::nullopt : fit_high(free_[i], bytes)}) {
          if (!s) continue;
          const uint64_t when = freed_when(*s, bytes);
          if (when < best) {
            best = when;
            pick = std::pair{i, *s};
          }
        }
    }
    const int64_t rotor = rotor_;
    const bool ring = how == Fit::kNext || pick->second == ring_start;
    take(pick->first, pick->second, bytes, owner);
    if (!ring) rotor_ = rotor;  // a step aside: the ring goes on from where it was
    return pick->second;
  }
  size_t chosen = n;
  std::optional<int64_t> start;
  for (size_t i = 0; i < n; ++i) {
    const std::optional<int64_t> s = fit(free_[i], bytes);
    if (!s) continue;
    if (chosen == n || free_[i].size < free_[chosen].size) {
      chosen = i;
      start = s;
    }
    if (how == Fit::kFirst) break;
  }
  if (chosen == n) return std::nullopt;
  take(chosen, *start, bytes, owner);
  return start;
}

void ByteAllocator::release(int64_t start) {
  auto it =
      std::find_if(live_.begin(), live_.end(), [&](const Live& l) { return l.start == start; });
  TRNSIM_ASSERT(it != live_.end());
  Range r{it->start, it->size};
  live_.erase(it);
  freed_.push_back({r.start, r.start + r.size, ++releases_});
  auto pos = std::lower_bound(free_.begin(), free_.end(), r.start,
                              [](const Range& a, int64_t s) { return a.start < s; });
  pos = free_.insert(pos, r);
  // Coalesce with the neighbours.
  if (pos + 1 != free_.end() && pos->start + pos->size == (pos + 1)->start) {
    pos->size += (pos + 1)->size;
    free_.erase(pos + 1);
  }
  if (pos != free_.begin() && (pos - 1)->start + (pos - 1)->size == pos->start) {
    (pos - 1)->size += pos->size;
    free_.erase(pos);
  }
}

int64_t ByteAllocator::free_bytes() const {
  int64_t n = 0;
  for (const Range& r : free_) n += r.size;
  return n;
}

int64_t ByteAllocator::largest_free() const {
  int64_t n = 0;
  for (const Range& r : free_) n = std::max(n, r.size);
  return n;
}

std::string ByteAllocator::live() const {
  std::string s;
  for (const Live& l : live_)
    s += fmt::format("{}'{}' [{}, {})", s.empty() ? "" : ", ", l.owner, l.start, l.start + l.size);
  return s.empty() ? "none" : s;
}

}  // namespace trnsim::kernel
