// Numbers in the text form of programs, printed so that parsing gives back the same bits:
// floats in their shortest round-tripping decimal form (fmt "{}"), NaNs other than the default
// quiet NaN as "nan:0x<bits>", integers in decimal (or 0x hex on input). The parse functions
// throw InputError("", text, why) for a malformed or out-of-range number; callers add where.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "base/error.h"

namespace trnsim::isa {

std::string format_float(float v);
std::string format_double(double v);
float parse_float(std::string_view text);
double parse_double(std::string_view text);

// An integer in [min, max] of T: decimal with optional sign, or 0x hex.
int64_t parse_int64(std::string_view text, int64_t lo, int64_t hi);
uint64_t parse_uint64(std::string_view text);

template <typename T>
T parse_integer(std::string_view text) {
  static_assert(std::is_integral_v<T>);
  if constexpr (std::is_same_v<T, uint64_t>) {
    return parse_uint64(text);
  } else {
    return static_cast<T>(
        parse_int64(text, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
  }
}

bool parse_bool(std::string_view text);

// A bare word needs no quotes: letters, digits and _ . - only, not empty.
bool is_bare_word(std::string_view s);
// "..." with \" \\ and newline (\n) escaped; the assembler's line cursor reads it back.
std::string quote(std::string_view s);

}  // namespace trnsim::isa
