// An LNC or whole-chip profile (chip_profile.h) as `trnsim profile --lnc N / --cores N` and
// trnsim.profile.run(lnc=, cores=) show it: the chip's figures, then each core's profile as
// a one-core profile shows it (core/timing/profile_report.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "chip/chip_profile.h"

namespace trnsim::chip {

// The chip's header: cores and LNC, total time and the core that sets it, the bound (the
// slowest core's), MFU / HFU over all cores, HBM per stack and for the chip, and a table of
// the cores (time, bound, MFU, HBM rate, each engine's busy share).
std::string chip_profile_header(const ChipProfile& p);
// The header, then each core's profile_text under a "core N" line.
std::string chip_profile_text(const ChipProfile& p);

// {"chip": {...}, "cores": [profile_json of each core]}. "chip" keys (times in ns as doubles,
// rates in TFLOPS and GB/s, shares as fractions of 1):
//   name, cores, lnc, logical_cores, total_ns, total_ps, launch_ns, slowest_core,
//   instructions, flops, issued_flops, peak_tflops (one core's BF16), mfu, hfu (over every
//   core's peak for total_ns), hbm_bytes, hbm_gbps, hbm_peak_gbps, hbm_share,
//   stacks[{stack, cores[], hbm_bytes, hbm_gbps, hbm_peak_gbps, hbm_share}],
//   bound{verdict, name, core} (the slowest core's roofline verdict),
//   per_core[{core, logical_core, rank, stack, total_ns, bound, mfu, hfu, hbm_gbps,
//     busy_shares{pe|dve|act|pool|sp|dma: share}}] (each over its own time, as cores[i]),
//   faults (every core's count).
nlohmann::json chip_profile_json(const ChipProfile& p);

}  // namespace trnsim::chip
