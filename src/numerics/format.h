// Number formats as descriptors (ml_dtypes' numeric_limits_* / SoftFloat style): one Format
// value describes the layout and special-value encoding, and one generic converter
// (convert.h) serves every pair. Platform quirks (overflow, NaN) are not here: they are the
// per-generation NumericPolicy (policy.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace trnsim::num {

enum class Dtype : uint8_t {
  kFp64,       // IEEE binary64: host interop only (not a Trainium format)
  kFp32,       // IEEE binary32
  kTf32,       // 1-8-10, stored in 32 bits as the fp32 pattern with the low 13 bits zero
  kBf16,       // 1-8-7
  kFp16,       // IEEE binary16
  kFp8E4M3,    // Neuron's legacy float8_e4m3: IEEE-like, max +-240, top exponent = inf/NaN
  kFp8E4M3Fn,  // OCP E4M3FN: max +-448, no inf, S.1111.111 = NaN
  kFp8E5M2,    // 1-5-2, IEEE-like (OCP E5M2)
  kFp8E3M4,    // 1-3-4, IEEE-like (max 15.5), as ml_dtypes float8_e3m4
  kCfp8,       // configurable FP8: E4M3 or E5M2 layout with a programmable bias (see cfp8())
  kFp4E2M1,    // OCP E2M1: max +-6, no inf/NaN; one code per byte (low nibble)
  kE8M0,       // OCP E8M0 scale: 2^(code-127), 0xFF = NaN, no sign, no zero
  kInt8, kInt16, kInt32, kUint8, kUint16, kUint32,
};

enum class Kind : uint8_t { kFloat, kInt };

// How a float format spends its top codes.
enum class Specials : uint8_t {
  kIeee,    // exponent field all ones: mantissa 0 = +-inf, else NaN
  kFn,      // no inf; only exponent and mantissa all ones is NaN (OCP E4M3FN)
  kFnuz,    // no inf, no -0: the code 1000...0 is the one NaN (cFP8; ml_dtypes *_fnuz)
  kFinite,  // no inf, no NaN (E2M1)
  kE8M0,    // unsigned power of two, 0xFF = NaN
};

struct Format {
  Dtype dtype = Dtype::kFp32;
  Kind kind = Kind::kFloat;
  uint8_t storage_bytes = 4;  // container per element in memory: 1, 2, 4 or 8 bytes
  uint8_t bits = 32;          // meaningful code bits (4 for E2M1, 19 for TF32, ...)
  // Float formats only.
  uint8_t exp_bits = 8;
  uint8_t man_bits = 23;
  uint8_t code_shift = 0;  // the code is stored shifted left by this (13 for TF32)
  // No implicit padding (equal formats have equal bytes: isa/access_pattern.h); stays zero.
  uint8_t reserved = 0;
  int16_t bias = 127;
  Specials specials = Specials::kIeee;
  // Integers: signedness; floats: whether there is a sign bit (false only for E8M0).
  bool is_signed = true;

  bool operator==(const Format&) const = default;

  bool has_inf() const { return kind == Kind::kFloat && specials == Specials::kIeee; }
  bool has_nan() const { return kind == Kind::kFloat && specials != Specials::kFinite; }
  // Largest finite value, smallest positive normal and subnormal (exact).
  double max_finite() const;
  double min_normal() const;
  double min_subnormal() const;
  // Canonical name, the one parse_format() accepts: "bf16", "fp8_e4m3fn", "cfp8_e5m2_b18", ...
  std::string name() const;
};

Format fp64();
Format fp32();
Format tf32();
Format bf16();
Format fp16();
Format fp8_e4m3();
Format fp8_e4m3fn();
Format fp8_e5m2();
Format fp8_e3m4();
Format fp4_e2m1();
Format e8m0();
Format int_format(Dtype d);  // kInt8 .. kUint32
// Configurable FP8 (cFP8). The hardware encoding is not public (HARDWARE.md s11 item 5);
// trnsim's choice, documented in docs/numerics.md: 1-4-3 (exp_bits 4) or 1-5-2 (exp_bits 5)
// layout, an exponent bias of 0..63 chosen by the program, no infinities, and the negative-zero
// code as the only NaN (fnuz) so that every other code is a finite value. Default layout E4M3;
// bias -1 means the layout's fnuz default 2^(exp_bits-1): 8 for E4M3, 16 for E5M2 (the
// ml_dtypes float8_e4m3fnuz / float8_e5m2fnuz encodings).
Format cfp8(int exp_bits = 4, int bias = -1);

// A format by name: canonical names and the NKI / numpy aliases ("bfloat16", "float8_e4m3",
// "float8_e8m0fnu", "float4_e2m1fn", "float32", "tfloat32", "uint8", ...). cFP8 names are
// "cfp8", "cfp8_e4m3", "cfp8_e5m2" with an optional "_b<bias>" suffix. Throws InputError
// naming the unknown name and listing the accepted ones.
Format parse_format(std::string_view name);

// Every fixed format (cFP8 with its default bias), in Dtype order.
std::span<const Format> builtin_formats();

}  // namespace trnsim::num
