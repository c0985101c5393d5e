// A short list kept inside its owner: the first N elements live in the object, more spill to
// the heap. An instruction's semaphore waits and signals are nearly always one or two, and a
// pass over a large program (the timing model's preparation, the race checker) reads them
// for every instruction: inline, they sit on the instruction's own cache lines instead of in
// two heap blocks of their own, and building the program allocates nothing for them.
// Vector-like: size, empty, data, begin/end (pointers: a contiguous range, so it converts to
// std::span), operator[], back, push_back, clear, ==.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace trnsim {

template <class T, size_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T> && N > 0);

 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;

  InlineVector() = default;
  InlineVector(std::initializer_list<T> items) {
    for (const T& x : items) push_back(x);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Elements live inline while they fit, all of them on the heap after that.
  T* data() { return size_ <= N ? inline_.data() : heap_.data(); }
  const T* data() const { return size_ <= N ? inline_.data() : heap_.data(); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(const T& x) {
    if (size_ < N) {
      inline_[size_++] = x;
      return;
    }
    if (size_ == N) heap_.assign(inline_.begin(), inline_.end());
    heap_.push_back(x);
    ++size_;
  }
  void clear() {
    size_ = 0;
    heap_.clear();
  }

  bool operator==(const InlineVector& o) const {
    return std::equal(begin(), end(), o.begin(), o.end());
  }

 private:
  uint32_t size_ = 0;
  std::array<T, N> inline_{};
  std::vector<T> heap_;  // every element once there are more than N
};

}  // namespace trnsim
