// Code -> exact double. Every value of every format fits binary64 (the widest narrow-format
// exponent range is cFP8 E5M2 with bias 0: 2^31), so the result is assembled from bit fields,
// never computed with rounding arithmetic.
#include <bit>
#include <cstdint>

#include "numerics/code_layout.h"
#include "numerics/convert.h"

namespace trnsim::num {

namespace {

using detail::low_mask;

constexpr uint64_t kDoubleSign = uint64_t{1} << 63;
constexpr uint64_t kDoubleExpMask = uint64_t{0x7FF} << 52;
constexpr uint64_t kDoubleQuiet = uint64_t{1} << 51;

double from_bits(uint64_t b) { return std::bit_cast<double>(b); }

double decode_int(const Format& f, uint64_t code) {
  if (f.is_signed && ((code >> (f.bits - 1)) & 1))  // two's complement: subtract 2^bits
    return -static_cast<double>((~code & low_mask(f.bits)) + 1);
  return static_cast<double>(code);
}

// A NaN of an IEEE-like format keeps its payload, left-aligned in the double's mantissa as
// IEEE widening conversions do, so that propagating it to another format keeps the top bits.
// Formats with a single NaN code (fn, fnuz, E8M0) have no payload: the default quiet NaN.
double nan_value(bool negative, uint64_t payload_top) {
  return from_bits((negative ? kDoubleSign : 0) | kDoubleExpMask | kDoubleQuiet | payload_top);
}

}  // namespace

double decode(const Format& f, uint64_t code) {
  code = (code >> f.code_shift) & low_mask(f.bits);
  if (f.kind == Kind::kInt) return decode_int(f, code);
  if (f.dtype == Dtype::kFp64) {  // host format: already a double; only NaNs are quieted
    const double d = from_bits(code);
    return d != d ? from_bits(code | kDoubleQuiet) : d;
  }

  const int m = f.man_bits;
  const bool negative = (code & detail::sign_bit(f)) != 0;
  const uint64_t mag = code & detail::mag_mask(f);
  const uint64_t exp_field = mag >> m;
  const uint64_t man = mag & low_mask(m);
  const uint64_t sign = negative ? kDoubleSign : 0;

  switch (f.specials) {
    case Specials::kIeee:
      if (exp_field == detail::exp_all_ones(f)) {
        if (man == 0) return from_bits(sign | kDoubleExpMask);
        return nan_value(negative, man << (52 - m));
      }
      break;
    case Specials::kFn:
      if (mag == detail::mag_mask(f)) return nan_value(negative, 0);
      break;
    case Specials::kFnuz:
      if (negative && mag == 0) return nan_value(true, 0);
      break;
    case Specials::kE8M0:
      if (mag == detail::mag_mask(f)) return nan_value(false, 0);
      // 2^(code - bias): exponent field 0 is a normal value, there is no zero.
      return from_bits(static_cast<uint64_t>(static_cast<int>(exp_field) - f.bias + 1023) << 52);
    case Specials::kFinite:
      break;
  }

  int exponent;   // of the leading one
  uint64_t frac;  // below the leading one, left-aligned to 52 bits
  if (exp_field != 0) {
    exponent = static_cast<int>(exp_field) - f.bias;
    frac = man << (52 - m);
  } else {
    if (man == 0) return from_bits(sign);
    const int lead = 63 - std::countl_zero(man);  // position of the leading one in man
    exponent = 1 - f.bias - m + lead;
    frac = (man << (52 - lead)) & low_mask(52);
  }
  // Narrow formats never reach the double's subnormal range (smallest: cFP8 E4M3 bias 63,
  // 2^-65), and fp64 took the early return.
  return from_bits(sign | (static_cast<uint64_t>(exponent + 1023) << 52) | frac);
}

}  // namespace trnsim::num
