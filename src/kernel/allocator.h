// On-chip memory allocation for tiles. A tile takes the same byte range in every partition it
// may use (tiles start at partition 0, as NKI's do), so one allocator per memory hands out
// byte ranges of a partition: first, best or next fit over a sorted free list. The builder
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
#include <vector>

namespace trnsim::kernel {

inline constexpr int64_t kSbufAlignment = 64;
inline constexpr int64_t kPsumAlignment = 8;

class ByteAllocator {
 public:
  // `bank` > 0: ranges up to `bank` bytes stay inside one bank, longer ones start on one.
  ByteAllocator(std::string memory, int64_t capacity, int64_t alignment, int64_t bank = 0);

  // How a free range is chosen: the lowest that fits; the one that leaves least; or the first
  // that fits from the end of the last allocation on, wrapping around (a ring: freed bytes are
  // reused as late as possible, so that a tile of one loop iteration does not wait for the
  // previous iteration's readers while memory is plentiful; placement.h).
  enum class Fit : uint8_t { kFirst, kBest, kNext };
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
  std::optional<int64_t> fit(const Range& r, int64_t bytes) const;
  void take(size_t i, int64_t start, int64_t bytes, const std::string& owner);

  std::string memory_;
  int64_t capacity_, alignment_, bank_;
  std::vector<Range> free_;  // sorted by start, coalesced
  std::vector<Live> live_;
  int64_t rotor_ = 0;  // Fit::kNext starts here
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
