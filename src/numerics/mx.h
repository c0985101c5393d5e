// OCP Microscaling (MX v1.0) block quantisation: 32 consecutive elements share one E8M0 scale.
#pragma once

#include <cstddef>
#include <cstdint>

#include "numerics/convert.h"
#include "numerics/format.h"

namespace trnsim::num {

inline constexpr size_t kMxBlockSize = 32;

enum class MxScaleRule : uint8_t {
  // OCP MX v1.0 section 6.3: X = 2^(floor(log2(amax)) - emax_elem).
  kOcp,
  // Trainium3 VectorE quantize_mx (HARDWARE.md s5): X = 2^(floor(log2(amax)) - (emax_elem - 1)),
  // twice the OCP scale, leaving headroom so rounding does not saturate. An all-zero block gets
  // 2^-127.
  kTrainium,
};

// Unbiased scale exponent for a block whose largest magnitude is `amax`, clamped to the E8M0
// range [-127, 127]. `elem` is an MX element format (fp8_e4m3fn, fp8_e5m2 or fp4_e2m1).
int mx_scale_exponent(double amax, const Format& elem, MxScaleRule rule);

// Quantise x[0..n) (n a multiple of 32, block b = x[32b .. 32b+31]) to element codes (one per
// byte) and E8M0 scale codes (one per block). Elements are x / 2^scale rounded with `opts`
// and saturated to the element's max finite (OCP: clamp); NaN inputs give NaN elements where
// the element format has NaN (else the scale becomes NaN).
void quantize_mx(const float* x, size_t n, const Format& elem, MxScaleRule rule,
                 const RoundOptions& opts, uint8_t* elems, uint8_t* scales);

// out[i] = decode(elem, elems[i]) * 2^(scales[i/32] - 127), exact in float for every MX case.
void dequantize_mx(const uint8_t* elems, const uint8_t* scales, size_t n, const Format& elem,
                   float* out);

}  // namespace trnsim::num
