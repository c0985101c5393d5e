// Exact unsigned 64-bit division by a divisor fixed at run time, as a multiply and shifts
// (Granlund and Montgomery, "Division by invariant integers using multiplication", PLDI 1994;
// the round-up variant of libdivide's libdivide_u64_gen / libdivide_u64_do). A hardware
// 64-bit divide costs tens of cycles; the timing model divides by the same clock frequency
// several times per simulated instruction. quotient(n) == n / d for every n.
#pragma once

#include <bit>
#include <cstdint>

#include "base/int128.h"

namespace trnsim {

class Divider {
 public:
  explicit Divider(uint64_t d) : d_(d) {
    const int log2 = 63 - std::countl_zero(d);  // floor(log2 d); d must be >= 1
    if ((d & (d - 1)) == 0) {                   // a power of two: a shift
      shift_ = log2;
      return;
    }
    // m = floor(2^(64 + log2) / d) < 2^64 since d > 2^log2.
    const uint128 num = uint128{1} << (64 + log2);
    uint64_t m = static_cast<uint64_t>(num / d);
    const uint64_t rem = static_cast<uint64_t>(num % d);
    if (d - rem < (uint64_t{1} << log2)) {  // 2^log2 / d's error fits: no add step
      shift_ = log2;
    } else {  // a 65-bit multiplier: 2m (+1), applied with the add step
      m += m;
      const uint64_t twice_rem = rem + rem;
      if (twice_rem >= d || twice_rem < rem) ++m;
      shift_ = log2;
      add_ = true;
    }
    magic_ = m + 1;
  }

  uint64_t divisor() const { return d_; }

  uint64_t quotient(uint64_t n) const {
    if (magic_ == 0) return n >> shift_;
    const auto q = static_cast<uint64_t>((static_cast<uint128>(magic_) * n) >> 64);
    if (!add_) return q >> shift_;
    return (((n - q) >> 1) + q) >> shift_;
  }

 private:
  uint64_t d_;
  uint64_t magic_ = 0;  // 0: a power of two
  int shift_ = 0;
  bool add_ = false;
};

}  // namespace trnsim
