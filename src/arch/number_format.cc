#include "arch/number_format.h"

#include <fmt/format.h>

#include <cmath>

namespace trnsim::arch {

std::string format_number(double x, int decimals) {
  if (!std::isfinite(x)) return fmt::format("{}", x);
  std::string s = fmt::format("{:.{}f}", std::fabs(x), decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  // Thousands separators in the integer part, and the sign unless the digits round to zero.
  const size_t dot = std::min(s.find('.'), s.size());
  std::string out;
  if (x < 0 && s.find_first_not_of("0.") != std::string::npos) out += '-';
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && i < dot && (dot - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

std::string format_bandwidth(double gbps) {
  if (gbps >= 1000) return format_number(gbps / 1000, 3) + " TB/s";
  return format_number(gbps, 2) + " GB/s";
}

std::string format_gib(double gib) {
  const double tib = gib / 1024;
  if (gib >= 1024 && std::fabs(tib * 100 - std::round(tib * 100)) < 1e-9) {
    return format_number(tib, 2) + " TiB";
  }
  return format_number(gib, 2) + " GiB";
}

}  // namespace trnsim::arch
