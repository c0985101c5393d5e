// Strong units. Time is integer picoseconds everywhere in the simulator (no floating-point
// time); sizes are bytes. Rates are derived at the edges (reports), never stored as time.
#pragma once

#include <compare>
#include <cstdint>

namespace trnsim {

template <typename Tag>
struct Quantity {
  int64_t v = 0;
  constexpr Quantity() = default;
  constexpr explicit Quantity(int64_t value) : v(value) {}
  constexpr auto operator<=>(const Quantity&) const = default;
  constexpr Quantity operator+(Quantity o) const { return Quantity(v + o.v); }
  constexpr Quantity operator-(Quantity o) const { return Quantity(v - o.v); }
  constexpr Quantity& operator+=(Quantity o) { v += o.v; return *this; }
  constexpr Quantity& operator-=(Quantity o) { v -= o.v; return *this; }
};

struct PicosecondsTag {};
struct BytesTag {};
using Picoseconds = Quantity<PicosecondsTag>;  // 1e-12 s
using Bytes = Quantity<BytesTag>;

inline constexpr int64_t kKiB = 1024;
inline constexpr int64_t kMiB = 1024 * kKiB;
inline constexpr int64_t kGiB = 1024 * kMiB;

}  // namespace trnsim
