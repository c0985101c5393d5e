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
}

std::optional<int64_t> ByteAllocator::allocate(int64_t bytes, const std::string& owner, Fit how) {
  TRNSIM_ASSERT(bytes > 0);
  const size_t n = free_.size();
  if (how == Fit::kNext) {
    // From the end of the last allocation on, wrapping around: the range holding the rotor is
    // tried from the rotor first, and last of all whole.
    const auto first = static_cast<size_t>(
        std::lower_bound(free_.begin(), free_.end(), rotor_,
                         [](const Range& r, int64_t at) { return r.start + r.size <= at; }) -
        free_.begin());
    for (size_t j = 0; j <= n && n > 0; ++j) {
      const size_t i = (first + j) % n;
      Range r = free_[i];
      if (j == 0 && r.start < rotor_) r = {rotor_, r.start + r.size - rotor_};
      if (const std::optional<int64_t> s = fit(r, bytes)) {
        take(i, *s, bytes, owner);
        return s;
      }
    }
    return std::nullopt;
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
