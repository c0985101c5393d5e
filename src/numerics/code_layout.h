// Internal to src/numerics: the code points a Format descriptor implies (masks, largest
// finite magnitude, the special codes). Everything here is derived from the descriptor, so a
// new format is a new descriptor, not a new branch in the converter.
#pragma once

#include <cstdint>

#include "numerics/format.h"

namespace trnsim::num::detail {

// Low n bits set, valid for n in 0..64 (a plain shift by 64 would be UB).
constexpr uint64_t low_mask(int n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

inline int sign_pos(const Format& f) { return f.bits - 1; }
inline uint64_t sign_bit(const Format& f) { return f.is_signed ? uint64_t{1} << sign_pos(f) : 0; }
// Bits below the sign: exponent and mantissa fields.
inline uint64_t mag_mask(const Format& f) { return low_mask(f.bits - (f.is_signed ? 1 : 0)); }
inline uint64_t exp_all_ones(const Format& f) { return low_mask(f.exp_bits); }

// Largest finite magnitude code (floats), i.e. the code of max_finite() without the sign.
inline uint64_t max_finite_mag(const Format& f) {
  switch (f.specials) {
    case Specials::kIeee:  // the top exponent is inf/NaN: one binade below, mantissa all ones
      return (exp_all_ones(f) << f.man_bits) - 1;
    case Specials::kFn:  // only S.1111.111 is NaN
      return mag_mask(f) - 1;
    case Specials::kE8M0:  // 0xFF is NaN
      return mag_mask(f) - 1;
    case Specials::kFnuz:  // NaN is the negative-zero code, so every magnitude is finite
    case Specials::kFinite:
      return mag_mask(f);
  }
  return 0;
}

// Default (canonical) quiet NaN, sign applied where the format can carry it. Only for formats
// with NaN.
inline uint64_t default_nan(const Format& f, bool negative) {
  switch (f.specials) {
    case Specials::kIeee:  // exponent all ones, quiet bit (top mantissa bit) set
      return (negative ? sign_bit(f) : 0) | (exp_all_ones(f) << f.man_bits) |
             (uint64_t{1} << (f.man_bits - 1));
    case Specials::kFn:
      return (negative ? sign_bit(f) : 0) | mag_mask(f);
    case Specials::kFnuz:  // the only NaN is 1000...0
      return sign_bit(f);
    case Specials::kE8M0:
      return mag_mask(f);
    case Specials::kFinite:
      break;
  }
  return 0;
}

inline uint64_t inf_code(const Format& f, bool negative) {
  return (negative ? sign_bit(f) : 0) | (exp_all_ones(f) << f.man_bits);
}

inline uint64_t max_code(const Format& f, bool negative) {
  return (negative ? sign_bit(f) : 0) | max_finite_mag(f);
}

// Zero with the sign where the format has a negative zero (not fnuz; E8M0 has no zero at all
// and never reaches here).
inline uint64_t zero_code(const Format& f, bool negative) {
  return negative && f.specials != Specials::kFnuz ? sign_bit(f) : 0;
}

}  // namespace trnsim::num::detail
