// Numbers for people: "1,299", "91.75", "0.8". Used by derivation texts and reports; JSON keeps
// full precision.
#pragma once

#include <string>

namespace trnsim::arch {

// At most `decimals` decimals, trailing zeros trimmed, thousands separated.
std::string format_number(double x, int decimals = 2);

// A bandwidth held in GB/s, shown in TB/s from 1,000 GB/s up ("2.9 TB/s", "384 GB/s").
std::string format_bandwidth(double gbps);

// A capacity held in GiB, shown in TiB from 1,024 GiB up when it is a round number of TiB.
std::string format_gib(double gib);

}  // namespace trnsim::arch
