// An allocator for the few very large arrays a run walks end to end (an unrolled program's
// instruction streams, the timing model's per-instruction records): blocks of 2 MiB and more
// are aligned to 2 MiB and offered to the kernel as transparent huge pages (madvise, Linux),
// so that a pass over 100 MB of instructions takes a TLB miss per 2 MiB instead of per 4 KiB
// page. Smaller blocks, other systems, or a kernel that declines: plain operator new.
#pragma once

#include <cstddef>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>

#include <cstdlib>
#endif

namespace trnsim {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

template <class T>
struct LargeAllocator {
  using value_type = T;

  LargeAllocator() = default;
  template <class U>
  LargeAllocator(const LargeAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= kHugePageBytes) {
      const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
      void* p = std::aligned_alloc(kHugePageBytes, rounded);
      if (p == nullptr) throw std::bad_alloc();
      madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure leaves normal pages
      return static_cast<T*>(p);
    }
#endif
    return static_cast<T*>(::operator new(bytes));
  }

  void deallocate(T* p, size_t n) {
#if defined(__linux__)
    if (n * sizeof(T) >= kHugePageBytes) {
      std::free(p);
      return;
    }
#endif
    ::operator delete(p);
  }

  template <class U>
  bool operator==(const LargeAllocator<U>&) const {
    return true;
  }
};

}  // namespace trnsim
