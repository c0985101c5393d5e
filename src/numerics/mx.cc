// OCP MX v1.0 block quantisation. Scale exponents come from the block's largest finite magnitude;
// elements are x / 2^scale through the rounding funnel, saturating. Non-finite inputs follow
// docs/numerics.md ("MX").
#include "numerics/mx.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <string>

#include "base/counter_rng.h"
#include "base/error.h"
#include "numerics/code_layout.h"

namespace trnsim::num {

namespace {

constexpr int kScaleBias = 127;
constexpr uint8_t kScaleNan = 0xFF;

void check_element_format(const Format& elem) {
  if (elem.kind != Kind::kFloat || elem.storage_bytes != 1 || !elem.is_signed)
    throw InputError("", "elem_format",
                     "'" + elem.name() +
                         "' is not an MX element format (fp8_e4m3fn, fp8_e5m2, fp4_e2m1 or "
                         "another signed 1-byte float format)");
}

// emax_elem of OCP MX v1.0 Table 1: the exponent of the element format's largest normal
// (e4m3fn 8, e5m2 15, e2m1 2), derived from the descriptor.
int element_emax(const Format& elem) { return std::ilogb(elem.max_finite()); }

}  // namespace

int mx_scale_exponent(double amax, const Format& elem, MxScaleRule rule) {
  check_element_format(elem);
  amax = std::fabs(amax);
  if (!std::isfinite(amax)) return kScaleNan - kScaleBias;  // 128: the NaN scale code
  if (amax == 0) return -kScaleBias;                        // all-zero block: 2^-127
  const int emax = element_emax(elem);
  const int floor_log2 = std::ilogb(amax);  // exact: the exponent of the leading bit
  const int e = rule == MxScaleRule::kOcp ? floor_log2 - emax : floor_log2 - (emax - 1);
  return std::clamp(e, -kScaleBias, kScaleBias);
}

void quantize_mx(const float* x, size_t n, const Format& elem, MxScaleRule rule,
                 const RoundOptions& opts, uint8_t* elems, uint8_t* scales) {
  check_element_format(elem);
  if (n % kMxBlockSize != 0)
    throw InputError("", "n",
                     "MX quantisation needs a multiple of 32 elements, got " + std::to_string(n));
  // Elements saturate (OCP MX: conversion clamps to the element's max normal).
  NumericPolicy policy = opts.policy;
  policy.overflow = Overflow::kSaturate;
  const bool sr = opts.rounding == Rounding::kStochastic;

  for (size_t b = 0; b < n / kMxBlockSize; ++b) {
    const float* xb = x + b * kMxBlockSize;
    double amax = 0;
    bool unrepresentable = false;  // a NaN or inf the element format cannot hold
    for (size_t j = 0; j < kMxBlockSize; ++j) {
      const double v = xb[j];
      if (std::isfinite(v)) {
        amax = std::max(amax, std::fabs(v));
      } else if (std::isnan(v) ? !elem.has_nan() : !elem.has_nan() && !elem.has_inf()) {
        unrepresentable = true;
      }
    }
    const int scale = mx_scale_exponent(amax, elem, rule);
    scales[b] = unrepresentable ? kScaleNan : static_cast<uint8_t>(scale + kScaleBias);

    for (size_t j = 0; j < kMxBlockSize; ++j) {
      const size_t i = b * kMxBlockSize + j;
      const double v = xb[j];
      const uint32_t rnd = sr ? random_u32(opts.seed, opts.stream, opts.index_base + i) : 0;
      uint64_t code;
      if (std::isfinite(v)) {
        // Exact: a float times 2^-scale with |scale| <= 127 stays inside the double range.
        code = encode(elem, std::ldexp(v, -scale), opts.rounding, rnd, policy);
      } else if (std::isinf(v) && !elem.has_inf()) {
        // Infinity in an element format without it: NaN where there is one (OCP's
        // non-saturating rule for specials); otherwise the block's scale is already NaN.
        code = elem.has_nan() ? detail::default_nan(elem, v < 0) : 0;
      } else {
        code = encode(elem, v, opts.rounding, rnd, opts.policy);  // NaN -> NaN, inf -> inf
      }
      elems[i] = static_cast<uint8_t>(code);
    }
  }
}

void dequantize_mx(const uint8_t* elems, const uint8_t* scales, size_t n, const Format& elem,
                   float* out) {
  check_element_format(elem);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t s = scales[i / kMxBlockSize];
    if (s == kScaleNan) {  // OCP MX: a NaN scale makes every element of its block NaN
      out[i] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    const double v = std::ldexp(decode(elem, elems[i]), static_cast<int>(s) - kScaleBias);
    // Exact in float except beyond its range (e.g. 448 * 2^127): give inf explicitly, since a
    // double -> float conversion of an out-of-range value is undefined behaviour.
    constexpr float kInf = std::numeric_limits<float>::infinity();
    out[i] = std::fabs(v) > FLT_MAX ? (v > 0 ? kInf : -kInf) : static_cast<float>(v);
  }
}

}  // namespace trnsim::num
