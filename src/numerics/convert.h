// Conversions between every pair of formats, with the rounding mode and the random bits as
// arguments (never globals), through one rounding funnel per target format.
//
// Every value of every supported format is exact in binary64, so decode() is exact and
// encode() rounds exactly once from the exact value: no double rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numerics/format.h"
#include "numerics/policy.h"

namespace trnsim::num {

// How one cast call rounds. Stochastic rounding draws element i's bits from
// random_u32(seed, stream, index_base + i) (base/counter_rng.h), so results depend only on
// (seed, stream, element index), never on call order or threads.
struct RoundOptions {
  Rounding rounding = Rounding::kNearestEven;
  uint64_t seed = 0;
  uint64_t stream = 0;
  uint64_t index_base = 0;
  NumericPolicy policy{};
};

// Exact value of one code (low `f.bits` bits after removing code_shift are used). NaN codes
// give a quiet NaN with the code's sign.
double decode(const Format& f, uint64_t code);

// The funnel: round the exact `value` to `f` and return its code (shifted by f.code_shift).
// `random` supplies the stochastic-rounding bits; only its top policy.sr_random_bits are used.
// Integers: rounding as for floats, saturating at the type's range, NaN -> 0.
uint64_t encode(const Format& f, double value, Rounding mode, uint32_t random,
                const NumericPolicy& policy);

// Bulk conversion of n elements stored in `from`'s container type to `to`'s container type.
void convert(const Format& from, const void* src, const Format& to, void* dst, size_t n,
             const RoundOptions& opts);

}  // namespace trnsim::num
