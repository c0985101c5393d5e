#include "isa/text_numbers.h"

#include <fmt/format.h>

#include <bit>
#include <cctype>
#include <cmath>

namespace trnsim::isa {

namespace {

constexpr uint32_t kQuietNan32 = 0x7fc00000u;
constexpr uint64_t kQuietNan64 = 0x7ff8000000000000ull;

[[noreturn]] void bad(std::string_view text, std::string_view why) {
  throw InputError("", std::string(text), std::string(why));
}

// "nan", "-nan" (the default quiet NaN) and "nan:0x<bits>" (any other NaN, bits exact).
template <typename Bits, typename F>
bool parse_nan(std::string_view text, Bits quiet, F& out) {
  bool neg = text.starts_with('-');
  std::string_view t = neg ? text.substr(1) : text;
  if (t == "nan") {
    out =
        std::bit_cast<F>(static_cast<Bits>(quiet | (neg ? Bits{1} << (sizeof(Bits) * 8 - 1) : 0)));
    return true;
  }
  if (neg || !t.starts_with("nan:0x")) return false;
  Bits bits = 0;
  std::string_view hex = t.substr(6);
  auto [p, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
  if (ec != std::errc() || p != hex.data() + hex.size() || hex.empty()) bad(text, "bad NaN bits");
  out = std::bit_cast<F>(bits);
  if (!std::isnan(out)) bad(text, "the bits are not a NaN");
  return true;
}

template <typename F>
F parse_real(std::string_view text) {
  F v{};
  using Bits = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  if (parse_nan<Bits>(text, sizeof(F) == 4 ? Bits(kQuietNan32) : Bits(kQuietNan64), v)) return v;
  std::string_view t = text.starts_with('+') ? text.substr(1) : text;
  if (text.starts_with("+-")) bad(text, "not a number");  // one sign ("+-1" read as -1)
  if (t == "inf" || t == "-inf")
    return t[0] == '-' ? -std::numeric_limits<F>::infinity() : std::numeric_limits<F>::infinity();
  // from_chars would also take "nan(...)", "infinity" and hex floats; only decimal is ours.
  for (char c : t)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
          c == '-' || c == '+'))
      bad(text, "not a number");
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range) bad(text, "number out of range");
  if (ec != std::errc() || p != t.data() + t.size() || t.empty()) bad(text, "not a number");
  return v;
}

template <typename F, typename Bits>
std::string format_real(F v, Bits quiet) {
  if (std::isnan(v)) {
    const Bits bits = std::bit_cast<Bits>(v);
    const Bits sign = Bits{1} << (sizeof(Bits) * 8 - 1);
    if ((bits & ~sign) == quiet) return (bits & sign) ? "-nan" : "nan";
    return fmt::format("nan:0x{:0{}x}", bits, sizeof(Bits) * 2);
  }
  return fmt::format("{}", v);  // shortest form that parses back to the same value
}

}  // namespace

std::string format_float(float v) { return format_real(v, kQuietNan32); }
std::string format_double(double v) { return format_real(v, kQuietNan64); }
float parse_float(std::string_view text) { return parse_real<float>(text); }
double parse_double(std::string_view text) { return parse_real<double>(text); }

int64_t parse_int64(std::string_view text, int64_t lo, int64_t hi) {
  std::string_view t = text;
  bool neg = false;
  if (t.starts_with('-') || t.starts_with('+')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  int base = 10;
  if (t.starts_with("0x") || t.starts_with("0X")) {
    base = 16;
    t.remove_prefix(2);
  }
  uint64_t mag = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), mag, base);
  if (ec == std::errc::result_out_of_range) bad(text, "number out of range");
  if (ec != std::errc() || p != t.data() + t.size() || t.empty()) bad(text, "not an integer");
  // Magnitudes up to 2^63 fit an int64 when negative; compare without overflow.
  const uint64_t limit = neg ? uint64_t(0) - static_cast<uint64_t>(lo < 0 ? lo : 0)
                             : static_cast<uint64_t>(hi < 0 ? 0 : hi);
  if (mag > limit) bad(text, fmt::format("integer out of range [{}, {}]", lo, hi));
  const int64_t v = neg ? static_cast<int64_t>(uint64_t(0) - mag) : static_cast<int64_t>(mag);
  if (v < lo || v > hi) bad(text, fmt::format("integer out of range [{}, {}]", lo, hi));
  return v;
}

uint64_t parse_uint64(std::string_view text) {
  std::string_view t = text;
  int base = 10;
  if (t.starts_with("0x") || t.starts_with("0X")) {
    base = 16;
    t.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (ec == std::errc::result_out_of_range) bad(text, "number out of range");
  if (ec != std::errc() || p != t.data() + t.size() || t.empty())
    bad(text, "not an unsigned integer");
  return v;
}

bool parse_bool(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  bad(text, "expected true or false");
}

bool is_bare_word(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      return false;
  return true;
}

std::string quote(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '\n') {
      q += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + '"';
}

}  // namespace trnsim::isa
