// The rounding funnel (SoftFloat s_roundPackTo* style, one function generic over the Format
// descriptor): an operation that has produced an exact, or exact-plus-sticky, result as
// sign * significand * 2^exp calls round_pack() once to get the target code. encode() in
// convert.h is round_pack() of a double's fields plus the special values.
#pragma once

#include <cstdint>

#include "numerics/format.h"
#include "numerics/policy.h"

namespace trnsim::num {

// Rounds (-1)^negative * (sig + s) * 2^exp to `f`, where s = 0 if !sticky and 0 < s < 1 (bits
// below sig's last bit that are not zero) otherwise. `sig` may have any width; a caller with
// sticky bits must give `sig` down to the round bit, the bit below the result's last one (for a
// normal float result: at least f.man_bits + 2 significant bits; for an integer: exp <= -1).
// Returns the code shifted by f.code_shift. Finite inputs only; sig == 0 (with !sticky) is a
// signed zero.
//
// Rounding (mode on the magnitude):
//  - kNearestEven: ties to the even significand (for E8M0, whose significand is the implicit
//    one alone, a tie therefore rounds up, as ml_dtypes and PyTorch do);
//  - kTowardZero: truncation;
//  - kStochastic: the discarded fraction's top R = policy.sr_random_bits bits (the rest are
//    truncated) plus the top R bits of `random`; up iff the sum is >= 2^R.
// Subnormal results are rounded at the subnormal quantum, then flushed to +-0 if
// policy.flush_subnormals. Overflow is decided after rounding (see policy.h; round toward zero
// gives +-max). Integers saturate at the type range. Throws InputError if stochastic rounding
// is asked for with sr_random_bits outside 1..32.
uint64_t round_pack(const Format& f, bool negative, int exp, uint64_t sig, bool sticky,
                    Rounding mode, uint32_t random, const NumericPolicy& policy);

}  // namespace trnsim::num
