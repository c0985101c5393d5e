// Format names: the canonical names (Format::name()) and the NKI / numpy / ml_dtypes aliases,
// declared once in one table.
#include <array>
#include <charconv>
#include <string>
#include <string_view>

#include "base/error.h"
#include "numerics/format.h"

namespace trnsim::num {

namespace {

struct NamedFormat {
  std::string_view name;
  Format (*make)();
};

Format make_int8() { return int_format(Dtype::kInt8); }
Format make_int16() { return int_format(Dtype::kInt16); }
Format make_int32() { return int_format(Dtype::kInt32); }
Format make_uint8() { return int_format(Dtype::kUint8); }
Format make_uint16() { return int_format(Dtype::kUint16); }
Format make_uint32() { return int_format(Dtype::kUint32); }
// ml_dtypes' *_fnuz types are exactly cFP8 with the fnuz default biases (docs/numerics.md).
Format make_e4m3fnuz() { return cfp8(4, 8); }
Format make_e5m2fnuz() { return cfp8(5, 16); }

constexpr std::array<NamedFormat, 18> kCanonical = {{
    {"fp64", fp64},
    {"fp32", fp32},
    {"tf32", tf32},
    {"bf16", bf16},
    {"fp16", fp16},
    {"fp8_e4m3", fp8_e4m3},
    {"fp8_e4m3fn", fp8_e4m3fn},
    {"fp8_e5m2", fp8_e5m2},
    {"fp8_e3m4", fp8_e3m4},
    {"fp4_e2m1", fp4_e2m1},
    {"e8m0", e8m0},
    {"int8", make_int8},
    {"int16", make_int16},
    {"int32", make_int32},
    {"uint8", make_uint8},
    {"uint16", make_uint16},
    {"uint32", make_uint32},
    {"cfp8", [] { return cfp8(); }},
}};

constexpr std::array<NamedFormat, 13> kAliases = {{
    {"float64", fp64},
    {"float32", fp32},
    {"tfloat32", tf32},
    {"bfloat16", bf16},
    {"float16", fp16},
    {"float8_e4m3", fp8_e4m3},
    {"float8_e4m3fn", fp8_e4m3fn},
    {"float8_e5m2", fp8_e5m2},
    {"float8_e3m4", fp8_e3m4},
    {"float4_e2m1fn", fp4_e2m1},
    {"float8_e8m0fnu", e8m0},
    {"float8_e4m3fnuz", make_e4m3fnuz},
    {"float8_e5m2fnuz", make_e5m2fnuz},
}};

std::string accepted_names() {
  std::string s;
  for (const auto& n : kCanonical) s += std::string(n.name) + ", ";
  s += "cfp8_e4m3, cfp8_e5m2 (optionally with _b<bias>, bias 0..63); aliases: ";
  for (size_t i = 0; i < kAliases.size(); ++i)
    s += std::string(kAliases[i].name) + (i + 1 < kAliases.size() ? ", " : "");
  return s;
}

[[noreturn]] void unknown(std::string_view name) {
  throw InputError(
      "", "format",
      "unknown number format '" + std::string(name) + "'; accepted: " + accepted_names());
}

// "cfp8", "cfp8_e4m3", "cfp8_e5m2", each with an optional "_b<bias>". Without a bias the layout's
// fnuz default 2^(exp_bits-1) is used: 8 for E4M3, 16 for E5M2.
Format parse_cfp8(std::string_view name) {
  std::string_view rest = name.substr(4);
  int exp_bits = 4;
  if (rest.starts_with("_e4m3")) {
    rest.remove_prefix(5);
  } else if (rest.starts_with("_e5m2")) {
    exp_bits = 5;
    rest.remove_prefix(5);
  }
  int bias = 1 << (exp_bits - 1);
  if (!rest.empty()) {
    if (!rest.starts_with("_b") || rest.size() < 3 || rest.size() > 4) unknown(name);
    rest.remove_prefix(2);
    const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), bias);
    if (ec != std::errc() || ptr != rest.data() + rest.size() || rest.front() == '-') unknown(name);
  }
  if (bias > 63)
    throw InputError(
        "", "format",
        "cFP8 exponent bias out of range in '" + std::string(name) + "': must be 0..63");
  return cfp8(exp_bits, bias);
}

}  // namespace

Format parse_format(std::string_view name) {
  for (const auto& n : kCanonical)
    if (n.name == name) return n.make();
  for (const auto& n : kAliases)
    if (n.name == name) return n.make();
  if (name.starts_with("cfp8_")) return parse_cfp8(name);
  unknown(name);
}

}  // namespace trnsim::num
