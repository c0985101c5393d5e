// The rounding funnel's entry point and its rare outcomes (overflow, integer targets). The
// common path is inline in funnel.h.
#include "numerics/round_pack.h"

#include <bit>

#include "numerics/funnel.h"

namespace trnsim::num {

namespace detail {

// What a finite value beyond max becomes. Round toward zero never leaves the finite range
// (IEEE 754 s7.4); the other modes follow the overflow policy.
uint64_t overflow_code(const Target& t, bool negative, Rounding mode, const NumericPolicy& p) {
  const Format& f = *t.f;
  if (mode == Rounding::kTowardZero || p.overflow == Overflow::kSaturate)
    return max_code(f, negative);
  if (f.has_inf()) return inf_code(f, negative);
  if (f.has_nan()) return default_nan(f, negative);
  return max_code(f, negative);  // E2M1: no inf, no NaN
}

// Integer targets: round to an integer per the mode, then saturate at the type's range.
uint64_t round_pack_int(const Target& t, bool negative, int exp, uint64_t sig, bool sticky,
                        Rounding mode, uint32_t random, const NumericPolicy& p) {
  const Format& f = *t.f;
  const uint64_t max_pos = low_mask(f.bits - (f.is_signed ? 1 : 0));
  const uint64_t max_neg = f.is_signed ? max_pos + 1 : 0;  // magnitude of the most negative
  const uint64_t limit = negative ? max_neg : max_pos;
  uint64_t mag = 0;
  if (sig != 0) {
    const int lz = std::countl_zero(sig);
    sig <<= lz;
    exp -= lz;
    // At 2^40 and beyond every integer range (<= 32 bits) is exceeded; below, the shift -exp
    // is at least 24.
    mag = exp + 63 >= 40 ? limit : round_shift(sig, -exp, sticky, mode, random, p.sr_random_bits);
  }
  if (mag > limit) mag = limit;
  // Two's complement of the magnitude, in unsigned arithmetic (no signed overflow).
  return (negative ? (~mag + 1) : mag) & low_mask(f.bits);
}

}  // namespace detail

uint64_t round_pack(const Format& f, bool negative, int exp, uint64_t sig, bool sticky,
                    Rounding mode, uint32_t random, const NumericPolicy& policy) {
  if (mode == Rounding::kStochastic) detail::check_sr_bits(policy.sr_random_bits);
  return detail::round_pack_to(detail::make_target(f), negative, exp, sig, sticky, mode, random,
                               policy);
}

}  // namespace trnsim::num
