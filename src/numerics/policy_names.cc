#include "numerics/policy_names.h"

#include <array>
#include <string>
#include <utility>

#include "base/error.h"

namespace trnsim::num {

namespace {

template <typename E, size_t N>
E parse(const std::array<std::pair<std::string_view, E>, N>& table, std::string_view name,
        std::string_view what) {
  std::string accepted;
  for (const auto& [n, e] : table) {
    if (n == name) return e;
    accepted += accepted.empty() ? "" : ", ";
    accepted += n;
  }
  throw InputError("", std::string(what),
                   "unknown value '" + std::string(name) + "' (accepted: " + accepted + ")");
}

template <typename E, size_t N>
std::string_view name(const std::array<std::pair<std::string_view, E>, N>& table, E e) {
  for (const auto& [n, v] : table)
    if (v == e) return n;
  TRNSIM_ASSERT(false);
  return {};
}

// The first name of each value is canonical; later ones are accepted aliases.
constexpr std::array<std::pair<std::string_view, Rounding>, 6> kRounding{{
    {"rne", Rounding::kNearestEven},
    {"stochastic", Rounding::kStochastic},
    {"rz", Rounding::kTowardZero},
    {"nearest_even", Rounding::kNearestEven},
    {"sr", Rounding::kStochastic},
    {"toward_zero", Rounding::kTowardZero},
}};
constexpr std::array<std::pair<std::string_view, Overflow>, 2> kOverflow{{
    {"inf", Overflow::kInfinity},
    {"saturate", Overflow::kSaturate},
}};
constexpr std::array<std::pair<std::string_view, NanMode>, 2> kNan{{
    {"propagate", NanMode::kPropagate},
    {"canonical", NanMode::kCanonical},
}};

}  // namespace

Rounding parse_rounding(std::string_view n, std::string_view what) {
  return parse(kRounding, n, what);
}
Overflow parse_overflow(std::string_view n, std::string_view what) {
  return parse(kOverflow, n, what);
}
NanMode parse_nan_mode(std::string_view n, std::string_view what) { return parse(kNan, n, what); }

std::string_view name_of(Rounding r) { return name(kRounding, r); }
std::string_view name_of(Overflow o) { return name(kOverflow, o); }
std::string_view name_of(NanMode n) { return name(kNan, n); }

}  // namespace trnsim::num
