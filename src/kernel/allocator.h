// On-chip memory allocation for tiles. A tile takes the same byte range in every partition it
// may use (tiles start at partition 0, as NKI's do), so one allocator per memory hands out
// byte ranges of a partition: first, best, next or oldest fit over a sorted free list. The builder
// places tiles by live range at build time (placement.h) with one of these per memory.
//
// SBUF: ranges are aligned to kSbufAlignment bytes (trnsim's choice; the hardware's alignment
// rules are not public, HARDWARE.md s11 item 6) within the usable bytes per partition (KLR).
// PSUM: a range of at most one bank never crosses a bank boundary, and a larger one starts on
// a bank boundary, so that every matmul output inside a small tile fits one bank (s2.2).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trnsim::kernel {

inline constexpr int64_t kSbufAlignment = 64;
inline constexpr int64_t kPsumAlignment = 8;

class ByteAllocator {
 public:
  // `bank` > 0: ranges up to `bank` bytes stay inside one bank, longer ones start on one.
  ByteAllocator(std::string memory, int64_t capacity, int64_t alignment, int64_t bank = 0);

  // How a free range is chosen: the lowest that fits; the one that leaves least; the first
  // that fits from the end of the last allocation on, wrapping around (a ring: freed bytes are
  // reused as late as possible, so that a tile of one loop iteration does not wait for the
  // previous iteration's readers while memory is plentiful; placement.h); or, kOldest, the
  // ring's choice unless other free bytes that fit were given back longer ago than some of
  // it: then those (the least recently freed placement, at either end of a free range; the
  // ring then goes on from where it was). Where memory is tight the ring wraps onto bytes just
  // given back, whose last reader (a store's DMA) may still be running; bytes freed earlier
  // are less likely to make the new tile wait.
  enum class Fit : uint8_t { kFirst, kBest, kNext, kOldest };
  // The start of a free range of `bytes`, or nothing when no free range fits.
  std::optional<int64_t> allocate(int64_t bytes, const std::string& owner, Fit how = Fit::kFirst);
  void release(int64_t start);

  int64_t capacity() const { return capacity_; }
  int64_t free_bytes() const;
  int64_t largest_free() const;
  // "'a' [0, 4096), 'b' [4096, 6144)": the live allocations, for exhaustion messages.
  std::string live() const;

 private:
  struct Range {
    int64_t start = 0, size = 0;
  };
  struct Live {
    int64_t start = 0, size = 0;
    std::string owner;
  };
  // Bytes given back, with when (release count): what Fit::kOldest compares. Only free bytes
  // are kept: an allocation trims what it takes.
  struct Freed {
    int64_t start = 0, end = 0;
    uint64_t when = 0;
  };
  std::optional<int64_t> fit(const Range& r, int64_t bytes) const;
  // The same, placed as high in the range as alignment allows (no banks).
  std::optional<int64_t> fit_high(const Range& r, int64_t bytes) const;
  // The ring's choice: (free-range index, start).
  std::optional<std::pair<size_t, int64_t>> next_fit(int64_t bytes) const;
  // The latest release among the bytes [start, start + bytes); 0: never used.
  uint64_t freed_when(int64_t start, int64_t bytes) const;
  void take(size_t i, int64_t start, int64_t bytes, const std::string& owner);

  std::string memory_;
  int64_t capacity_, alignment_, bank_;
  std::vector<Range> free_;  // sorted by start, coalesced
  std::vector<Live> live_;
  int64_t rotor_ = 0;  // Fit::kNext starts here
  std::vector<Freed> freed_;
  uint64_t releases_ = 0;
};

// Gives an allocation back when the last view of its tile is destroyed. The allocator is
// shared so that views may outlive the builder safely.
struct AllocationHandle {
  std::shared_ptr<ByteAllocator> allocator;
  int64_t start = 0;
  AllocationHandle(std::shared_ptr<ByteAllocator> a, int64_t s)
      : allocator(std::move(a)), start(s) {}
  ~AllocationHandle() { allocator->release(start); }
  AllocationHandle(const AllocationHandle&) = delete;
  AllocationHandle& operator=(const AllocationHandle&) = delete;
};

}  // namespace trnsim::kernel
