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

std::optional<int64_t> ByteAllocator::allocate(int64_t bytes, const std::string& owner) {
  TRNSIM_ASSERT(bytes > 0);
  for (size_t i = 0; i < free_.size(); ++i) {
    const std::optional<int64_t> start = fit(free_[i], bytes);
    if (!start) continue;
    const Range r = free_[i];
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
    // The parts of the free range before and after the allocation stay free.
    std::vector<Range> rest;
    if (*start > r.start) rest.push_back({r.start, *start - r.start});
    if (*start + bytes < r.start + r.size)
      rest.push_back({*start + bytes, r.start + r.size - (*start + bytes)});
    free_.insert(free_.begin() + static_cast<std::ptrdiff_t>(i), rest.begin(), rest.end());
    live_.push_back({*start, bytes, owner});
    return start;
  }
  return std::nullopt;
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
