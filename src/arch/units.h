// Units of the spec. A key's name carries its canonical unit (`clock_ghz`, `bandwidth_gbps`,
// `capacity_gib`); a data file may state a leaf in the unit it was published in
// (`{ v = 820, unit = "GiB/s", src = "HW-T1" }`) and the loader converts it here, once, so the
// file keeps the figure exactly as published and the typed spec has one unit per key.
//
// Bandwidth is bytes per second with decimal prefixes: "GB/s" = 1e9 B/s. "Gbit/s" is bits.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::arch {

// Factor f such that value_in_canonical = value_in_from * f, or nullopt when `from` is not a
// unit of the same quantity as `canonical`.
std::optional<double> unit_factor(std::string_view from, std::string_view canonical);

// The units a value of `canonical` may be written in (canonical first).
std::vector<std::string> units_for(std::string_view canonical);

}  // namespace trnsim::arch
