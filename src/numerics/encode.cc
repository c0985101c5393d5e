// encode(): a double's special values per the target's encoding and the policy; its finite
// values go through the rounding funnel (funnel.h) exactly once.
#include "numerics/convert.h"
#include "numerics/funnel.h"

namespace trnsim::num {

namespace detail {

namespace {

// NaN input. Integers get 0; E2M1, which has no NaN, also gets +0 (docs/numerics.md).
uint64_t encode_nan(const Format& f, bool negative, uint64_t payload52, const NumericPolicy& p) {
  if (!f.has_nan()) return 0;
  if (f.specials != Specials::kIeee || p.nan == NanMode::kCanonical)
    return default_nan(f, negative) << f.code_shift;
  // Propagate: sign, the payload's top m bits, and the quiet bit (the top mantissa bit) forced,
  // so that a signalling NaN never truncates to infinity.
  const int m = f.man_bits;
  const uint64_t man = (payload52 >> (52 - m)) | (uint64_t{1} << (m - 1));
  return ((negative ? sign_bit(f) : 0) | (exp_all_ones(f) << m) | man) << f.code_shift;
}

// Infinite input: the target's infinity, else what the overflow policy makes of it.
uint64_t encode_inf(const Format& f, bool negative, const NumericPolicy& p) {
  if (f.kind == Kind::kInt) {
    const uint64_t max_pos = low_mask(f.bits - (f.is_signed ? 1 : 0));
    if (!negative) return max_pos;
    return f.is_signed ? ~max_pos & low_mask(f.bits) : 0;  // most negative, or 0 if unsigned
  }
  if (f.has_inf()) return inf_code(f, negative) << f.code_shift;
  if (f.specials == Specials::kE8M0 && negative) return default_nan(f, false);
  if (p.overflow == Overflow::kInfinity && f.has_nan())
    return default_nan(f, negative) << f.code_shift;
  return max_code(f, negative) << f.code_shift;
}

}  // namespace

uint64_t encode_special(const Format& f, uint64_t bits, const NumericPolicy& p) {
  const bool negative = (bits >> 63) != 0;
  const uint64_t frac = bits & low_mask(52);
  return frac != 0 ? encode_nan(f, negative, frac, p) : encode_inf(f, negative, p);
}

}  // namespace detail

uint64_t encode(const Format& f, double value, Rounding mode, uint32_t random,
                const NumericPolicy& policy) {
  if (mode == Rounding::kStochastic) detail::check_sr_bits(policy.sr_random_bits);
  return detail::encode_to(detail::make_target(f), value, mode, random, policy);
}

}  // namespace trnsim::num
