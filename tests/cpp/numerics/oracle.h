// The independent oracle of the numerics tests: a slow, obviously correct reference in the
// spirit of TestFloat's slowfloat (STYLE.md practice 4).
//
//  - Values are exact dyadic rationals (-1)^neg * mag * 2^exp held in integers (Exact).
//  - Formats are written out again here from their published definitions (Spec), not taken
//    from numerics/format.h's descriptors, and every code is decoded from its bit fields.
//  - round() takes an exact value, finds its two representable neighbours lo <= |x| <= hi in
//    the target (with the exponent range unbounded above, so that overflow is decided after
//    rounding), and picks one by the mode. It never rounds through an intermediate format and
//    never calls the library under test. Every code it produces is decoded back and checked.
//
// Only the vocabulary enums (Rounding, Overflow) come from the library's policy.h.
#pragma once

#include <cstdint>
#include <string>

#include "numerics/policy.h"

namespace trnsim::num::oracle {

// How a format spends its codes, from the format definitions.
enum class Sp : uint8_t {
  kIeee,    // top exponent: mantissa 0 = inf, else NaN
  kFn,      // no inf; S.1...1.1...1 is NaN (OCP E4M3FN)
  kFnuz,    // no inf, no -0; 1000...0 is the one NaN
  kFinite,  // no inf, no NaN (E2M1)
  kE8M0,    // 2^(code-127), 0xFF NaN, no sign, no zero
  kInt,     // two's complement / unsigned integer
};

struct Spec {
  std::string name;
  int bits = 0;  // code width
  int exp_bits = 0, man_bits = 0, bias = 0;
  Sp sp = Sp::kIeee;
  bool is_signed = true;  // floats: has a sign bit; ints: signed
  int code_shift = 0;     // the code is stored shifted left by this (TF32)

  bool is_int() const { return sp == Sp::kInt; }
  bool has_inf() const { return sp == Sp::kIeee; }
  bool has_nan() const { return sp != Sp::kFinite && sp != Sp::kInt; }
  uint64_t code_mask() const { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
};

Spec spec_fp64();
Spec spec_fp32();
Spec spec_tf32();
Spec spec_bf16();
Spec spec_fp16();
Spec spec_e4m3();                        // Neuron legacy: bias 7, IEEE-like, max 240
Spec spec_e4m3fn();                      // OCP: bias 7, no inf, S.1111.111 NaN, max 448
Spec spec_e5m2();                        // bias 15, IEEE-like, max 57344
Spec spec_e3m4();                        // bias 3, IEEE-like, max 15.5
Spec spec_cfp8(int exp_bits, int bias);  // fnuz, E4M3 or E5M2 layout
Spec spec_e2m1();                        // bias 1, max 6, no inf/NaN
Spec spec_e8m0();
Spec spec_int(int bits, bool is_signed);

// An exact value. Finite values are normalised (mag odd, or mag 0 with exp 0).
struct Exact {
  enum Cls : uint8_t { kFinite, kInf, kNan };
  Cls cls = kFinite;
  bool neg = false;
  uint64_t mag = 0;
  int exp = 0;

  static Exact finite(bool neg, uint64_t mag, int exp);
  static Exact inf(bool neg);
  static Exact nan(bool neg);
  bool is_finite() const { return cls == kFinite; }
  bool is_nan() const { return cls == kNan; }
  bool is_zero() const { return cls == kFinite && mag == 0; }
  int ilog2() const;  // floor(log2 |x|), finite nonzero only
  bool operator==(const Exact&) const = default;
  std::string str() const;  // e.g. "-0x3p-2 (-0.75)"
};

// Compares |a| and |b| (finite): -1, 0, 1.
int cmp_abs(const Exact& a, const Exact& b);
// a * 2^k.
Exact scaled(const Exact& a, int k);
// (a + b) / 2 for finite a, b of the same sign whose exponents are close (adjacent codes).
Exact midpoint(const Exact& a, const Exact& b);

// The exact value of a code (bits above code_shift + bits are ignored).
Exact decode(const Spec& s, uint64_t code);
Exact from_double(double d);
Exact from_float(float f);
// Exact conversion to double; the value must be representable (every format here is).
double to_double(const Exact& x);
float to_float(const Exact& x);

// Extremes (positive), exact, and the code of the largest finite value.
uint64_t max_finite_code(const Spec& s);
Exact max_finite(const Spec& s);
Exact min_normal(const Spec& s);     // floats only
Exact min_subnormal(const Spec& s);  // floats only (E8M0: 2^-127)
bool code_is_nan(const Spec& s, uint64_t code);
// The positive code of the exact representable magnitude |x|; throws if not representable.
uint64_t code_of(const Spec& s, const Exact& x);

// One acceptable result: an exact code, or any NaN code (of sign nan_neg when check_sign).
struct Outcome {
  bool nan = false;
  uint64_t code = 0;
  bool nan_neg = false, check_sign = true;
};

// What the library must return: outcome `a`, or `b` where the documents leave a point open
// (has_b), or anything when they do not define the result (unspecified).
struct Expect {
  bool unspecified = false;
  Outcome a;
  bool has_b = false;
  Outcome b;
  std::string str() const;
};

// Rounds the exact value x to s. `random` is the stochastic-rounding word (its top sr_bits
// bits are r; round the magnitude away from zero iff floor(frac * 2^sr_bits) + r >= 2^sr_bits,
// frac = (|x| - lo) / (hi - lo)). Rules:
//  - Floats: the magnitude is rounded (RNE ties to the even code, RZ truncates); a result above
//    max finite overflows: RZ gives max; otherwise kSaturate gives max and kInfinity gives inf
//    where the format has it, else NaN where it has NaN, else max. fnuz formats have no -0.
//  - NaN -> NaN with its sign (fnuz: 0x80, E8M0: 0xFF); E2M1 has no NaN: unspecified.
//  - +-inf -> inf where the format has it, else NaN where it has NaN, else max. Under
//    kSaturate the documents disagree (policy.h speaks of finite values only; the compiler flag
//    it names clamps inf to max), so either is accepted (has_b).
//  - E8M0 has no zero and no sign: zero, negative and below-2^-127 inputs are unspecified.
//    An RNE tie goes to the larger power of two (no even significand exists; ml_dtypes,
//    PyTorch and LLVM round up).
//  - Elsewhere RNE ties go to the even code.
//  - Integers: the magnitude is rounded the same way, then saturated to the type's range;
//    NaN -> 0; +-inf saturate.
//  - flush: a nonzero result below min normal becomes +-0 (fnuz +0).
Expect round(const Spec& s, const Exact& x, Rounding mode, uint32_t random, Overflow ov,
             int sr_bits = 16, bool flush = false);

// Whether `got` satisfies `e` (integers are compared in the low `bits` bits).
bool satisfies(const Spec& s, const Expect& e, uint64_t got);

}  // namespace trnsim::num::oracle
