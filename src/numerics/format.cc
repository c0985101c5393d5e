// Format descriptors: the one place each format's layout and special-value encoding is declared.
// Limits and names are derived from the descriptor.
#include "numerics/format.h"

#include <array>
#include <string>

#include "base/error.h"
#include "numerics/code_layout.h"
#include "numerics/convert.h"

namespace trnsim::num {

namespace {

constexpr Format float_format(Dtype d, int storage, int bits, int e, int m, int bias, Specials s,
                              int code_shift = 0, bool is_signed = true) {
  Format f;
  f.dtype = d;
  f.kind = Kind::kFloat;
  f.storage_bytes = static_cast<uint8_t>(storage);
  f.bits = static_cast<uint8_t>(bits);
  f.exp_bits = static_cast<uint8_t>(e);
  f.man_bits = static_cast<uint8_t>(m);
  f.code_shift = static_cast<uint8_t>(code_shift);
  f.bias = static_cast<int16_t>(bias);
  f.specials = s;
  f.is_signed = is_signed;
  return f;
}

// Integers carry no exponent or mantissa; kFinite marks "no special codes".
constexpr Format integer_format(Dtype d, int bytes, bool is_signed) {
  Format f;
  f.dtype = d;
  f.kind = Kind::kInt;
  f.storage_bytes = static_cast<uint8_t>(bytes);
  f.bits = static_cast<uint8_t>(8 * bytes);
  f.exp_bits = 0;
  f.man_bits = 0;
  f.bias = 0;
  f.specials = Specials::kFinite;
  f.is_signed = is_signed;
  return f;
}

double int_max(const Format& f) {
  return static_cast<double>(detail::low_mask(f.bits - (f.is_signed ? 1 : 0)));
}

}  // namespace

Format fp64() { return float_format(Dtype::kFp64, 8, 64, 11, 52, 1023, Specials::kIeee); }
Format fp32() { return float_format(Dtype::kFp32, 4, 32, 8, 23, 127, Specials::kIeee); }
// TF32 keeps fp32's container and field positions: its 19-bit code is the top of the pattern.
Format tf32() { return float_format(Dtype::kTf32, 4, 19, 8, 10, 127, Specials::kIeee, 13); }
Format bf16() { return float_format(Dtype::kBf16, 2, 16, 8, 7, 127, Specials::kIeee); }
Format fp16() { return float_format(Dtype::kFp16, 2, 16, 5, 10, 15, Specials::kIeee); }
Format fp8_e4m3() { return float_format(Dtype::kFp8E4M3, 1, 8, 4, 3, 7, Specials::kIeee); }
Format fp8_e4m3fn() { return float_format(Dtype::kFp8E4M3Fn, 1, 8, 4, 3, 7, Specials::kFn); }
Format fp8_e5m2() { return float_format(Dtype::kFp8E5M2, 1, 8, 5, 2, 15, Specials::kIeee); }
Format fp8_e3m4() { return float_format(Dtype::kFp8E3M4, 1, 8, 3, 4, 3, Specials::kIeee); }
Format fp4_e2m1() { return float_format(Dtype::kFp4E2M1, 1, 4, 2, 1, 1, Specials::kFinite); }
Format e8m0() {
  return float_format(Dtype::kE8M0, 1, 8, 8, 0, 127, Specials::kE8M0, 0, /*is_signed=*/false);
}

Format int_format(Dtype d) {
  switch (d) {
    case Dtype::kInt8:
      return integer_format(d, 1, true);
    case Dtype::kInt16:
      return integer_format(d, 2, true);
    case Dtype::kInt32:
      return integer_format(d, 4, true);
    case Dtype::kUint8:
      return integer_format(d, 1, false);
    case Dtype::kUint16:
      return integer_format(d, 2, false);
    case Dtype::kUint32:
      return integer_format(d, 4, false);
    default:
      break;
  }
  throw InputError("int_format() takes an integer dtype (kInt8 .. kUint32)");
}

Format cfp8(int exp_bits, int bias) {
  if (exp_bits != 4 && exp_bits != 5)
    throw InputError("", "cfp8",
                     "exponent bits must be 4 (E4M3) or 5 (E5M2), got " + std::to_string(exp_bits));
  if (bias == -1) bias = 1 << (exp_bits - 1);
  if (bias < 0 || bias > 63)
    throw InputError("", "cfp8", "exponent bias must be in 0..63, got " + std::to_string(bias));
  return float_format(Dtype::kCfp8, 1, 8, exp_bits, 7 - exp_bits, bias, Specials::kFnuz);
}

double Format::max_finite() const {
  if (kind == Kind::kInt) return int_max(*this);
  return decode(*this, detail::max_code(*this, false) << code_shift);
}

double Format::min_normal() const {
  if (kind == Kind::kInt) return 1.0;
  // E8M0 has no subnormals: its exponent field 0 is the normal 2^-127.
  const uint64_t code = specials == Specials::kE8M0 ? 0 : uint64_t{1} << man_bits;
  return decode(*this, code << code_shift);
}

double Format::min_subnormal() const {
  if (kind == Kind::kInt) return 1.0;
  if (specials == Specials::kE8M0) return min_normal();  // smallest positive value
  return decode(*this, uint64_t{1} << code_shift);
}

std::string Format::name() const {
  switch (dtype) {
    case Dtype::kFp64:
      return "fp64";
    case Dtype::kFp32:
      return "fp32";
    case Dtype::kTf32:
      return "tf32";
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kFp8E4M3:
      return "fp8_e4m3";
    case Dtype::kFp8E4M3Fn:
      return "fp8_e4m3fn";
    case Dtype::kFp8E5M2:
      return "fp8_e5m2";
    case Dtype::kFp8E3M4:
      return "fp8_e3m4";
    // Always the full form, so the name alone fixes layout and bias.
    case Dtype::kCfp8:
      return (exp_bits == 5 ? "cfp8_e5m2_b" : "cfp8_e4m3_b") + std::to_string(bias);
    case Dtype::kFp4E2M1:
      return "fp4_e2m1";
    case Dtype::kE8M0:
      return "e8m0";
    case Dtype::kInt8:
      return "int8";
    case Dtype::kInt16:
      return "int16";
    case Dtype::kInt32:
      return "int32";
    case Dtype::kUint8:
      return "uint8";
    case Dtype::kUint16:
      return "uint16";
    case Dtype::kUint32:
      return "uint32";
  }
  return "unknown";
}

std::span<const Format> builtin_formats() {
  static const std::array<Format, 18> kAll = {
      fp64(),
      fp32(),
      tf32(),
      bf16(),
      fp16(),
      fp8_e4m3(),
      fp8_e4m3fn(),
      fp8_e5m2(),
      fp8_e3m4(),
      cfp8(),
      fp4_e2m1(),
      e8m0(),
      int_format(Dtype::kInt8),
      int_format(Dtype::kInt16),
      int_format(Dtype::kInt32),
      int_format(Dtype::kUint8),
      int_format(Dtype::kUint16),
      int_format(Dtype::kUint32),
  };
  return kAll;
}

}  // namespace trnsim::num
