#include "profile/readable.h"

#include <fmt/format.h>

namespace trnsim::profile {

std::string time_text(Picoseconds t) {
  const double x = static_cast<double>(t.v);
  if (x >= 1e12) return fmt::format("{:.4g} s", x * 1e-12);
  if (x >= 1e9) return fmt::format("{:.4g} ms", x * 1e-9);
  if (x >= 1e6) return fmt::format("{:.4g} us", x * 1e-6);
  return fmt::format("{:.4g} ns", x * 1e-3);
}

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.4g} GB", b * 1e-9);
  if (b >= 1e6) return fmt::format("{:.4g} MB", b * 1e-6);
  if (b >= 1e3) return fmt::format("{:.4g} kB", b * 1e-3);
  return fmt::format("{:.0f} B", b);
}

std::string rate_text(double bytes_per_s) {
  if (bytes_per_s >= 1e12) return fmt::format("{:.4g} TB/s", bytes_per_s * 1e-12);
  return fmt::format("{:.4g} GB/s", bytes_per_s * 1e-9);
}

std::string pct(double fraction) { return fmt::format("{:.2f} %", 100.0 * fraction); }

}  // namespace trnsim::profile
