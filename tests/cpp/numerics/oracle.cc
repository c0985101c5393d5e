#include "oracle.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace trnsim::num::oracle {
namespace {

using u128 = unsigned __int128;

[[noreturn]] void fail(const std::string& what) { throw std::logic_error("oracle: " + what); }
void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

int bitlen(uint64_t v) { return 64 - std::countl_zero(v); }

Spec float_spec(const char* name, int exp_bits, int man_bits, int bias, Sp sp) {
  Spec s;
  s.name = name;
  s.bits = 1 + exp_bits + man_bits;
  s.exp_bits = exp_bits;
  s.man_bits = man_bits;
  s.bias = bias;
  s.sp = sp;
  return s;
}

// |x| / 2^q = n + rem / 2^d, 0 <= rem < 2^d. d may exceed 64 (then n = 0 and rem = mag).
struct Split {
  uint64_t n = 0, rem = 0;
  int d = 0;
};

Split split(const Exact& x, int q) {
  Split s;
  const int d = q - x.exp;
  if (d <= 0) {
    check(bitlen(x.mag) - d <= 64, "split: integer part too wide");
    s.n = x.mag << -d;
  } else if (d >= 64) {
    s.rem = x.mag;
    s.d = d;
  } else {
    s.n = x.mag >> d;
    s.rem = x.mag & ((1ull << d) - 1);
    s.d = d;
  }
  return s;
}

// Sign of rem / 2^d - 1/2.
int cmp_half(const Split& s) {
  if (s.rem == 0) return -1;
  if (s.d >= 65) return -1;  // rem < 2^64 <= 2^(d-1)
  const u128 twice = static_cast<u128>(s.rem) << 1, one = static_cast<u128>(1) << s.d;
  return twice < one ? -1 : (twice == one ? 0 : 1);
}

// floor(rem / 2^d * 2^r).
uint64_t frac_top_bits(const Split& s, int r) {
  if (s.d >= r) {
    const int sh = s.d - r;
    return sh >= 64 ? 0 : s.rem >> sh;
  }
  return s.rem << (r - s.d);  // rem < 2^d, d < r <= 32
}

// Whether the magnitude moves from lo = n * 2^q to hi = (n + 1) * 2^q. `lo_code_odd` says
// whether lo's code is odd (for ties to the even code).
bool round_up(const Split& s, bool lo_code_odd, Rounding mode, uint32_t random, int sr_bits) {
  switch (mode) {
    case Rounding::kTowardZero:
      return false;
    case Rounding::kNearestEven: {
      const int c = cmp_half(s);
      return c > 0 || (c == 0 && lo_code_odd);
    }
    case Rounding::kStochastic: {
      const uint64_t k = frac_top_bits(s, sr_bits);
      const uint64_t r = sr_bits == 32 ? random : (random >> (32 - sr_bits));
      return static_cast<u128>(k) + r >= (static_cast<u128>(1) << sr_bits);
    }
  }
  fail("bad rounding mode");
}

Outcome code_outcome(uint64_t code) {
  Outcome o;
  o.code = code;
  return o;
}

Expect exactly(uint64_t code) {
  Expect e;
  e.a = code_outcome(code);
  return e;
}

Expect unspecified() {
  Expect e;
  e.unspecified = true;
  return e;
}

Expect either(const Expect& x, const Expect& y) {
  if (x.unspecified || y.unspecified) return unspecified();
  if (!x.a.nan && !y.a.nan && x.a.code == y.a.code) return x;
  Expect e = x;
  e.has_b = true;
  e.b = y.a;
  return e;
}

Expect round_int(const Spec& s, const Exact& x, Rounding mode, uint32_t random, int sr_bits) {
  const int64_t lo_v = s.is_signed ? -(int64_t{1} << (s.bits - 1)) : 0;
  const int64_t hi_v =
      s.is_signed ? (int64_t{1} << (s.bits - 1)) - 1 : static_cast<int64_t>(s.code_mask());
  auto value = [&](int64_t v) {
    v = std::clamp(v, lo_v, hi_v);
    return exactly(static_cast<uint64_t>(v) & s.code_mask());
  };
  if (x.is_nan()) return exactly(0);
  if (x.cls == Exact::kInf) return value(x.neg ? lo_v : hi_v);
  if (x.is_zero()) return exactly(0);
  if (x.ilog2() >= 40) return value(x.neg ? lo_v : hi_v);
  const Split sp = split(x, 0);
  const uint64_t mag = sp.n + (round_up(sp, sp.n & 1, mode, random, sr_bits) ? 1 : 0);
  const int64_t v = static_cast<int64_t>(mag);
  return value(x.neg ? -v : v);
}

Expect round_e8m0(const Spec& s, const Exact& x, Rounding mode, uint32_t random, Overflow ov,
                  int sr_bits) {
  const Expect nan = exactly(0xFF), max = exactly(0xFE);
  if (x.is_nan()) return nan;
  if (x.neg || x.is_zero()) return unspecified();  // no sign, no zero
  if (x.cls == Exact::kInf) return ov == Overflow::kSaturate ? either(nan, max) : nan;
  const int e = x.ilog2();
  if (e < -127) return unspecified();  // below the smallest value, with no zero to go to
  // Neighbours 2^e (code e + 127) and 2^(e+1) (code e + 128). A tie goes up: the significand
  // of both neighbours is the implicit 1 alone, so "ties to even" has no even candidate
  // (IEEE 754 needs p >= 2); ml_dtypes 0.6 float8_e8m0fnu, PyTorch's Float8_e8m0fnu and LLVM's
  // APFloat all treat that 1 as an odd last bit and round up (3.0 -> 4.0, 0.75 -> 1.0).
  const bool up = round_up(split(x, e), /*lo_code_odd=*/true, mode, random, sr_bits);
  const int r = e + (up ? 1 : 0);
  if (r > 127) {
    if (mode == Rounding::kTowardZero || ov == Overflow::kSaturate) return max;
    return nan;  // no inf, has NaN
  }
  const Expect out = exactly(static_cast<uint64_t>(r + 127));
  check(cmp_abs(decode(s, out.a.code), Exact::finite(false, 1, r)) == 0, "e8m0 result");
  return out;
}

}  // namespace

Spec spec_fp64() { return float_spec("fp64", 11, 52, 1023, Sp::kIeee); }
Spec spec_fp32() { return float_spec("fp32", 8, 23, 127, Sp::kIeee); }
Spec spec_tf32() {
  Spec s = float_spec("tf32", 8, 10, 127, Sp::kIeee);
  s.code_shift = 13;
  return s;
}
Spec spec_bf16() { return float_spec("bf16", 8, 7, 127, Sp::kIeee); }
Spec spec_fp16() { return float_spec("fp16", 5, 10, 15, Sp::kIeee); }
Spec spec_e4m3() { return float_spec("fp8_e4m3", 4, 3, 7, Sp::kIeee); }
Spec spec_e4m3fn() { return float_spec("fp8_e4m3fn", 4, 3, 7, Sp::kFn); }
Spec spec_e5m2() { return float_spec("fp8_e5m2", 5, 2, 15, Sp::kIeee); }
Spec spec_e3m4() { return float_spec("fp8_e3m4", 3, 4, 3, Sp::kIeee); }
Spec spec_cfp8(int exp_bits, int bias) {
  check(exp_bits == 4 || exp_bits == 5, "cfp8 layout");
  Spec s = float_spec("cfp8", exp_bits, 7 - exp_bits, bias, Sp::kFnuz);
  s.name = "cfp8_e" + std::to_string(exp_bits) + "m" + std::to_string(7 - exp_bits) + "_b" +
           std::to_string(bias);
  return s;
}
Spec spec_e2m1() { return float_spec("fp4_e2m1", 2, 1, 1, Sp::kFinite); }
Spec spec_e8m0() {
  Spec s;
  s.name = "e8m0";
  s.bits = 8;
  s.exp_bits = 8;
  s.bias = 127;
  s.sp = Sp::kE8M0;
  s.is_signed = false;
  return s;
}
Spec spec_int(int bits, bool is_signed) {
  Spec s;
  s.name = (is_signed ? "int" : "uint") + std::to_string(bits);
  s.bits = bits;
  s.sp = Sp::kInt;
  s.is_signed = is_signed;
  return s;
}

Exact Exact::finite(bool neg, uint64_t mag, int exp) {
  Exact x;
  x.neg = neg;
  if (mag != 0) {
    const int tz = std::countr_zero(mag);
    x.mag = mag >> tz;
    x.exp = exp + tz;
  }
  return x;
}
Exact Exact::inf(bool neg) {
  Exact x;
  x.cls = kInf;
  x.neg = neg;
  return x;
}
Exact Exact::nan(bool neg) {
  Exact x;
  x.cls = kNan;
  x.neg = neg;
  return x;
}
int Exact::ilog2() const {
  check(cls == kFinite && mag != 0, "ilog2 of zero or special");
  return bitlen(mag) - 1 + exp;
}
std::string Exact::str() const {
  if (cls == kNan) return neg ? "-nan" : "nan";
  if (cls == kInf) return neg ? "-inf" : "inf";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s0x%llxp%+d (%.9g)", neg ? "-" : "",
                static_cast<unsigned long long>(mag), exp,
                (neg ? -1.0 : 1.0) * std::ldexp(static_cast<double>(mag), exp));
  return buf;
}

int cmp_abs(const Exact& a, const Exact& b) {
  check(a.is_finite() && b.is_finite(), "cmp_abs of a special");
  if (a.mag == 0 || b.mag == 0) return (a.mag != 0) - (b.mag != 0);
  const int la = a.ilog2(), lb = b.ilog2();
  if (la != lb) return la < lb ? -1 : 1;
  const int e = std::min(a.exp, b.exp);  // same top bit: both shifted mags fit 64 bits
  const uint64_t am = a.mag << (a.exp - e), bm = b.mag << (b.exp - e);
  return am < bm ? -1 : (am == bm ? 0 : 1);
}

Exact scaled(const Exact& a, int k) {
  Exact r = a;
  if (r.is_finite() && r.mag != 0) r.exp += k;
  return r;
}

Exact midpoint(const Exact& a, const Exact& b) {
  check(a.is_finite() && b.is_finite(), "midpoint of a special");
  check(a.mag == 0 || b.mag == 0 || a.neg == b.neg, "midpoint of opposite signs");
  const bool neg = a.mag != 0 ? a.neg : b.neg;
  if (a.mag == 0 && b.mag == 0) return Exact::finite(neg, 0, 0);
  int e = a.mag == 0 ? b.exp : (b.mag == 0 ? a.exp : std::min(a.exp, b.exp));
  const int sa = a.exp - e, sb = b.exp - e;
  check((a.mag == 0 || bitlen(a.mag) + sa <= 120) && (b.mag == 0 || bitlen(b.mag) + sb <= 120),
        "midpoint: exponents too far apart");
  u128 sum = (a.mag == 0 ? 0 : static_cast<u128>(a.mag) << sa) +
             (b.mag == 0 ? 0 : static_cast<u128>(b.mag) << sb);
  e -= 1;
  while ((sum & 1) == 0) {
    sum >>= 1;
    ++e;
  }
  check((sum >> 64) == 0, "midpoint too wide");
  return Exact::finite(neg, static_cast<uint64_t>(sum), e);
}

Exact decode(const Spec& s, uint64_t code) {
  const uint64_t c = (code >> s.code_shift) & s.code_mask();
  switch (s.sp) {
    case Sp::kInt:
      if (s.is_signed && ((c >> (s.bits - 1)) & 1)) {
        return Exact::finite(true, (s.code_mask() - c) + 1, 0);  // 2^bits - c
      }
      return Exact::finite(false, c, 0);
    case Sp::kE8M0:
      if (c == 0xFF) return Exact::nan(false);
      return Exact::finite(false, 1, static_cast<int>(c) - 127);
    default:
      break;
  }
  const int m = s.man_bits, eb = s.exp_bits;
  const bool neg = s.is_signed && ((c >> (s.bits - 1)) & 1);
  const uint64_t ef = (c >> m) & ((1ull << eb) - 1), f = c & ((1ull << m) - 1);
  const uint64_t e_ones = (1ull << eb) - 1, m_ones = (1ull << m) - 1;
  switch (s.sp) {
    case Sp::kIeee:
      if (ef == e_ones) return f == 0 ? Exact::inf(neg) : Exact::nan(neg);
      break;
    case Sp::kFn:
      if (ef == e_ones && f == m_ones) return Exact::nan(neg);
      break;
    case Sp::kFnuz:
      if (c == 1ull << (s.bits - 1)) return Exact::nan(true);  // the sign bit is set
      break;
    default:
      break;
  }
  if (ef == 0) return Exact::finite(neg, f, 1 - s.bias - m);
  return Exact::finite(neg, (1ull << m) | f, static_cast<int>(ef) - s.bias - m);
}

Exact from_double(double d) {
  static const Spec kFp64 = spec_fp64();
  return decode(kFp64, std::bit_cast<uint64_t>(d));
}
Exact from_float(float f) {
  static const Spec kFp32 = spec_fp32();
  return decode(kFp32, std::bit_cast<uint32_t>(f));
}

double to_double(const Exact& x) {
  if (x.cls == Exact::kNan) {
    return std::copysign(std::numeric_limits<double>::quiet_NaN(), x.neg ? -1.0 : 1.0);
  }
  if (x.cls == Exact::kInf) return x.neg ? -HUGE_VAL : HUGE_VAL;
  check(bitlen(x.mag) <= 53, "to_double: too many bits");
  const double r = std::ldexp(static_cast<double>(x.mag), x.exp);
  const double v = x.neg ? -r : r;
  check(from_double(v) == x, "to_double: not representable");
  return v;
}

float to_float(const Exact& x) {
  if (x.cls == Exact::kNan) {
    return std::copysign(std::numeric_limits<float>::quiet_NaN(), x.neg ? -1.0f : 1.0f);
  }
  if (x.cls == Exact::kInf) return x.neg ? -HUGE_VALF : HUGE_VALF;
  check(bitlen(x.mag) <= 24, "to_float: too many bits");
  const float r = std::ldexp(static_cast<float>(x.mag), x.exp);
  const float v = x.neg ? -r : r;
  check(from_float(v) == x, "to_float: not representable");
  return v;
}

uint64_t max_finite_code(const Spec& s) {
  if (s.sp == Sp::kInt) return s.is_signed ? (1ull << (s.bits - 1)) - 1 : s.code_mask();
  if (s.sp == Sp::kE8M0) return 0xFE;
  const uint64_t e_ones = (1ull << s.exp_bits) - 1, m_ones = (1ull << s.man_bits) - 1;
  uint64_t c = 0;
  switch (s.sp) {
    case Sp::kIeee:
      c = ((e_ones - 1) << s.man_bits) | m_ones;
      break;
    case Sp::kFn:
      c = (e_ones << s.man_bits) | (m_ones - 1);
      break;
    default:  // kFnuz, kFinite: every code with the sign bit clear is finite
      c = (e_ones << s.man_bits) | m_ones;
      break;
  }
  return c << s.code_shift;
}

Exact max_finite(const Spec& s) { return decode(s, max_finite_code(s)); }
Exact min_normal(const Spec& s) {
  if (s.sp == Sp::kE8M0) return Exact::finite(false, 1, -127);
  return Exact::finite(false, 1, 1 - s.bias);
}
Exact min_subnormal(const Spec& s) {
  if (s.sp == Sp::kE8M0) return Exact::finite(false, 1, -127);
  return Exact::finite(false, 1, 1 - s.bias - s.man_bits);
}

bool code_is_nan(const Spec& s, uint64_t code) { return decode(s, code).is_nan(); }

uint64_t code_of(const Spec& s, const Exact& x) {
  check(x.is_finite() && !s.is_int(), "code_of: special or integer");
  if (x.mag == 0) return 0;
  const int e = x.ilog2();
  uint64_t c = 0;
  if (s.sp == Sp::kE8M0) {
    check(x.mag == 1 && e >= -127 && e <= 127, "code_of: not an E8M0 value");
    c = static_cast<uint64_t>(e + 127);
  } else {
    const int m = s.man_bits, q = std::max(e, 1 - s.bias) - m;  // the quantum's exponent
    check(x.exp >= q, "code_of: below the quantum");
    check(bitlen(x.mag) + (x.exp - q) <= m + 1, "code_of: too wide");
    const uint64_t n = x.mag << (x.exp - q);
    if (n >> m) {
      c = (static_cast<uint64_t>(q + m + s.bias) << m) | (n - (1ull << m));
    } else {
      c = n;  // subnormal: exponent field 0
    }
  }
  c <<= s.code_shift;
  const Exact back = decode(s, c);
  check(back.is_finite() && cmp_abs(back, x) == 0, "code_of: not representable");
  return c;
}

std::string Expect::str() const {
  if (unspecified) return "(unspecified)";
  auto one = [](const Outcome& o) {
    char buf[64];
    if (o.nan) {
      std::snprintf(buf, sizeof buf, "%sNaN", !o.check_sign ? "any " : (o.nan_neg ? "-" : "+"));
    } else {
      std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(o.code));
    }
    return std::string(buf);
  };
  return has_b ? one(a) + " or " + one(b) : one(a);
}

Expect round(const Spec& s, const Exact& x, Rounding mode, uint32_t random, Overflow ov,
             int sr_bits, bool flush) {
  check(sr_bits >= 1 && sr_bits <= 32, "sr_bits out of range");
  if (s.is_int()) return round_int(s, x, mode, random, sr_bits);
  if (s.sp == Sp::kE8M0) return round_e8m0(s, x, mode, random, ov, sr_bits);

  const int m = s.man_bits;
  const uint64_t sign_bit = 1ull << (s.bits - 1);
  const uint64_t max_code = max_finite_code(s) >> s.code_shift;
  auto signed_code = [&](bool neg, uint64_t mag_code) {
    if (mag_code == 0 && s.sp == Sp::kFnuz) neg = false;  // no -0
    return exactly((mag_code | (neg ? sign_bit : 0)) << s.code_shift);
  };
  auto nan = [&](bool neg) {
    if (s.sp == Sp::kFinite) return unspecified();
    if (s.sp == Sp::kFnuz) return exactly(sign_bit);
    Expect e;
    e.a.nan = true;
    e.a.nan_neg = neg;
    return e;
  };
  auto beyond_max = [&](bool neg) {  // the kInfinity rule
    if (s.has_inf()) return signed_code(neg, ((1ull << s.exp_bits) - 1) << m);
    if (s.has_nan()) return nan(neg);
    return signed_code(neg, max_code);
  };

  if (x.is_nan()) return nan(x.neg);
  if (x.cls == Exact::kInf) {
    const Expect rule = beyond_max(x.neg);
    return ov == Overflow::kSaturate ? either(rule, signed_code(x.neg, max_code)) : rule;
  }
  if (x.is_zero()) return signed_code(x.neg, 0);

  const int q = std::max(x.ilog2(), 1 - s.bias) - m;  // lo = n * 2^q, hi = (n + 1) * 2^q
  const Split sp = split(x, q);
  check(sp.n < (2ull << m), "split: n too wide");
  // Ties to the even code: the code's last bit is n's last bit (normal or subnormal; m >= 1).
  uint64_t n = sp.n + (round_up(sp, sp.n & 1, mode, random, sr_bits) ? 1 : 0);
  if (n == 0) return signed_code(x.neg, 0);
  const Exact r = Exact::finite(false, n, q);
  if (cmp_abs(r, max_finite(s)) > 0) {
    if (mode == Rounding::kTowardZero || ov == Overflow::kSaturate) {
      return signed_code(x.neg, max_code);
    }
    return beyond_max(x.neg);
  }
  if (flush && cmp_abs(r, min_normal(s)) < 0) return signed_code(x.neg, 0);
  return signed_code(x.neg, code_of(s, r) >> s.code_shift);
}

bool satisfies(const Spec& s, const Expect& e, uint64_t got) {
  if (e.unspecified) return true;
  auto ok = [&](const Outcome& o) {
    if (o.nan) {
      if ((got & ~(s.code_mask() << s.code_shift)) != 0) return false;
      const Exact v = decode(s, got);
      return v.is_nan() && (!o.check_sign || v.neg == o.nan_neg);
    }
    if (s.is_int()) return ((got ^ o.code) & s.code_mask()) == 0;
    return got == o.code;
  };
  return ok(e.a) || (e.has_b && ok(e.b));
}

}  // namespace trnsim::num::oracle
