// Internal to src/numerics: the rounding funnel's body, inline so that bulk loops (convert.cc,
// mx.cc) compile it into their element loop with the target's derived constants (Target)
// computed once per call instead of once per element. round_pack() in round_pack.h is this
// function behind a non-inline entry point.
#pragma once

#include <bit>
#include <cstdint>

#include "numerics/code_layout.h"
#include "numerics/format.h"
#include "numerics/policy.h"
#include "numerics/round_bits.h"

namespace trnsim::num::detail {

// Everything the funnel derives from a Format descriptor.
struct Target {
  const Format* f;
  bool is_int;
  bool e8m0;
  int m;            // mantissa bits
  int emin;         // exponent of the smallest normal
  int emin_field;   // exponent field holding emin: 1 (IEEE-like, field 0 = subnormals) or 0 (E8M0)
  int field_limit;  // exponent fields above this cannot hold a finite value
  int code_shift;
  uint64_t max_mag;   // largest finite magnitude code
  uint64_t sign_bit;  // 0 for unsigned formats
};

inline Target make_target(const Format& f) {
  Target t{};
  t.f = &f;
  t.is_int = f.kind == Kind::kInt;
  t.e8m0 = f.specials == Specials::kE8M0;
  t.m = f.man_bits;
  t.emin = t.e8m0 ? -f.bias : 1 - f.bias;
  t.emin_field = t.e8m0 ? 0 : 1;
  t.field_limit = static_cast<int>(exp_all_ones(f)) + 1;
  t.code_shift = f.code_shift;
  t.max_mag = t.is_int ? 0 : max_finite_mag(f);
  t.sign_bit = sign_bit(f);
  return t;
}

// Rare outcomes, out of line (round_pack.cc).
uint64_t overflow_code(const Target& t, bool negative, Rounding mode, const NumericPolicy& p);
uint64_t round_pack_int(const Target& t, bool negative, int exp, uint64_t sig, bool sticky,
                        Rounding mode, uint32_t random, const NumericPolicy& p);

// See round_pack() in round_pack.h for the contract. The caller has checked sr_random_bits.
inline uint64_t round_pack_to(const Target& t, bool negative, int exp, uint64_t sig, bool sticky,
                              Rounding mode, uint32_t random, const NumericPolicy& p) {
  if (t.is_int) return round_pack_int(t, negative, exp, sig, sticky, mode, random, p);
  // E8M0 has neither sign nor zero (docs/numerics.md: such inputs become NaN).
  if (t.e8m0 && (negative || sig == 0)) return default_nan(*t.f, false);
  if (sig == 0) return zero_code(*t.f, negative) << t.code_shift;

  const int lz = std::countl_zero(sig);
  sig <<= lz;
  exp -= lz;
  const int lead = exp + 63;  // value in [2^lead, 2^(lead+1))
  // Exponent fields past the top one cannot hold a finite value: skip the packing arithmetic.
  if (lead - t.emin + t.emin_field > t.field_limit)
    return overflow_code(t, negative, mode, p) << t.code_shift;

  uint64_t mag;
  if (lead >= t.emin) {
    // Normal: keep m + 1 bits (with the implicit one). Packing by addition lets a rounding
    // carry out of the significand step into the next binade, and past max into overflow.
    const uint64_t kept = round_shift(sig, 63 - t.m, sticky, mode, random, p.sr_random_bits);
    mag =
        (static_cast<uint64_t>(lead - t.emin + t.emin_field) << t.m) + kept - (uint64_t{1} << t.m);
  } else if (t.e8m0) {
    // Below 2^-127 there is no smaller value and no zero: the smallest scale (as ml_dtypes).
    mag = 0;
  } else {
    // Subnormal: the quantum is 2^(emin - m); a carry to 2^m lands on the smallest normal.
    mag = round_shift(sig, 63 - t.m + (t.emin - lead), sticky, mode, random, p.sr_random_bits);
  }

  if (mag > t.max_mag) [[unlikely]]
    return overflow_code(t, negative, mode, p) << t.code_shift;
  if (mag < (uint64_t{1} << t.m) && !t.e8m0) [[unlikely]] {  // subnormal or zero
    if (p.flush_subnormals) mag = 0;
    if (mag == 0) return zero_code(*t.f, negative) << t.code_shift;
  }
  // The sign by mask, not by branch: it is data-dependent in bulk conversions.
  return ((t.sign_bit & (uint64_t{0} - uint64_t{negative})) | mag) << t.code_shift;
}

// NaN and infinity inputs (encode.cc); `bits` is the double's bit pattern.
uint64_t encode_special(const Format& f, uint64_t bits, const NumericPolicy& p);

// encode() with the target's constants precomputed.
inline uint64_t encode_to(const Target& t, double value, Rounding mode, uint32_t random,
                          const NumericPolicy& p) {
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  const int exp_field = static_cast<int>((bits >> 52) & 0x7FF);
  if (exp_field == 0x7FF) return encode_special(*t.f, bits, p);
  // Finite: value = sig * 2^(exp - 52), with the implicit one for normals; the funnel
  // normalises subnormal doubles itself.
  const uint64_t frac = bits & low_mask(52);
  const uint64_t sig = exp_field == 0 ? frac : frac | (uint64_t{1} << 52);
  const int exp = (exp_field == 0 ? 1 : exp_field) - 1023 - 52;
  return round_pack_to(t, (bits >> 63) != 0, exp, sig, false, mode, random, p);
}

}  // namespace trnsim::num::detail
