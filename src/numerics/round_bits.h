// Internal to src/numerics: the one rounding decision, shared by the float and integer paths of
// the funnel. Everything is integer arithmetic on the significand, so no host rounding mode or
// floating-point environment is involved.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"
#include "numerics/code_layout.h"
#include "numerics/policy.h"

namespace trnsim::num::detail {

inline void check_sr_bits(int r) {
  if (r < 1 || r > 32)
    throw InputError("", "sr_random_bits", "must be in 1..32, got " + std::to_string(r));
}

// floor(sig / 2^shift), plus one if the mode rounds the discarded part up. `sig` has its top bit
// at position 63 (normalised by the caller) and shift >= 1; any shift is valid (>= 64 discards
// everything). `sticky` flags nonzero bits below sig's last bit.
inline uint64_t round_shift(uint64_t sig, int shift, bool sticky, Rounding mode, uint32_t random,
                            int sr_bits) {
  const uint64_t kept = shift >= 64 ? 0 : sig >> shift;
  switch (mode) {
    case Rounding::kTowardZero:
      return kept;
    case Rounding::kNearestEven: {
      if (shift > 64) return kept;  // the fraction is below 2^-(shift-64) <= 1/2
      const uint64_t rem = sig & low_mask(shift);
      const uint64_t half = uint64_t{1} << (shift - 1);
      // Bitwise, not short-circuit: the decision is data-dependent and a branch on it
      // mispredicts half the time in bulk conversions.
      const uint64_t up = static_cast<uint64_t>(rem > half) |
                          (static_cast<uint64_t>(rem == half) & (uint64_t{sticky} | (kept & 1)));
      return kept + up;
    }
    case Rounding::kStochastic: {
      const int r = sr_bits;
      // The top r bits of the discarded fraction: bits [shift - r, shift) of sig (bits above 63
      // are zero). Fewer than r discarded bits are left-aligned; anything below r is truncated.
      uint64_t frac_r;
      if (shift >= r)
        frac_r = shift - r >= 64 ? 0 : (sig >> (shift - r)) & low_mask(r);
      else
        frac_r = (sig & low_mask(shift)) << (r - shift);
      const uint64_t rnd = random >> (32 - r);
      return kept + static_cast<uint64_t>(frac_r + rnd >= (uint64_t{1} << r));
    }
  }
  return kept;
}

}  // namespace trnsim::num::detail
