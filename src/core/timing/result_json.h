// A timed run's figures as JSON, for `trnsim run --json`, the Python API and scripts. Times are
// integer picoseconds (the simulator's unit) with a microsecond copy for reading; rates are
// derived here, at the edge.
#pragma once

#include <nlohmann/json.hpp>

#include "core/timing/timing_result.h"

namespace trnsim::core {

// Keys: total_ps, total_us, launch_ps, latency_ps (total + launch), instructions, events,
// engines{name: {instructions, busy_ps, busy_percent, active_ps, active_percent, finish_ps,
// by_opcode{mnemonic: count}}}, tensor{flops, peak_flops, utilisation}, dma{transfers, pieces,
// bytes, hbm_read_bytes, hbm_write_bytes, hbm_gbps, engine_busy_ps[]}, sbuf_high_water_bytes,
// psum_high_water_bytes, spill{tiles, stores, reloads, bytes_spilled, bytes_reloaded}
// (kernel/placement.h), faults[{kind, instruction, message, text}].
nlohmann::json timing_result_json(const TimingResult& r);

}  // namespace trnsim::core
