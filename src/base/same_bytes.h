// Whether two objects' first N bytes are equal, for structs without implicit padding (so that
// equal bytes are equal fields, floats by bits). Compared a word at a time without an early
// exit, which the compiler turns into a few vector loads and no call: the timing model's
// pricing memo compares ~450 bytes per instruction of a program (core/timing/timing_program.cc),
// and a library memcmp call costs more than the comparison itself at these sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace trnsim {

template <size_t N>
inline bool same_bytes(const void* a, const void* b) {
  static_assert(N % sizeof(uint64_t) == 0, "a whole number of 8-byte words");
  const auto* p = static_cast<const unsigned char*>(a);
  const auto* q = static_cast<const unsigned char*>(b);
  uint64_t diff = 0;
  for (size_t i = 0; i < N; i += sizeof(uint64_t)) {
    uint64_t x = 0, y = 0;
    std::memcpy(&x, p + i, sizeof x);
    std::memcpy(&y, q + i, sizeof y);
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace trnsim
