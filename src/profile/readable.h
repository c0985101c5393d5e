// Figures in readable units for the text reports (`trnsim profile`, one core or a chip): four
// significant digits in the largest unit under the value.
#pragma once

#include <string>

#include "base/units.h"

namespace trnsim::profile {

std::string time_text(Picoseconds t);       // "19.66 ms", "62.52 us", "850 ns"
std::string bytes_text(double bytes);       // "5.44 GB", "738 MB", "12 kB", "64 B"
std::string rate_text(double bytes_per_s);  // "2.9 TB/s", "276.4 GB/s"
std::string pct(double fraction);           // "35.55 %"

}  // namespace trnsim::profile
