// A profile (timing_profile.h) as `trnsim profile` and trnsim.profile.run show it: a
// neuron-profile-like text summary in readable units, and JSON with exact figures.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/timing/timing_profile.h"

namespace trnsim::core {

// Total time, per-engine table (busy, waits on semaphores and which engine signals them, on
// DMA, on ports, on its own instructions, idle), the bound, MFU / HFU, HBM bandwidth, the
// roofline, the critical path (share per engine, top instructions), instruction classes,
// faults.
std::string profile_text(const CoreProfile& p);

// Keys (times in ns, as doubles; rates in TFLOPS and GB/s; shares as fractions of 1):
//   chip, total_ns, total_ps, launch_ns, instructions;
//   engines{pe|dve|act|pool|sp: {instructions, busy_ns, busy_share, wait_semaphore_ns,
//     waited_on_ns{engine: ns}, wait_dma_ns, wait_port_ns, wait_own_ns, wait_barrier_ns,
//     idle_ns, finish_ns}};
//   bound{verdict, name, busy_shares{engine|dma: share}} (TimingResult::bound);
//   mfu, hfu (fractions);
//   roofline{verdict, name, roof, flops, issued_flops, hbm_bytes, intensity_flops_per_byte,
//     ridge_flops_per_byte, achieved_tflops, peak_tflops, attainable_tflops, mfu, hfu,
//     mfu_dtype, hbm_gbps, hbm_peak_gbps, hbm_share, chip_hbm_gbps,
//     classes[{engine, opcode, count, busy_ns, busy_share, flops, issued_flops, hbm_bytes,
//              tflops_while_busy}]};
//   critical_path{length, time_ns, per_engine_ns{pe|dve|act|pool|sp|dma: ns},
//     per_engine_share{...}, released_by{edge: nodes}, top[{name, engine, transfer, index,
//     line, count, time_ns, share}]} (a transfer's engine is "dma", its trigger in `trigger`);
//   dma{transfers, hbm_read_bytes, hbm_write_bytes}; faults[{kind, instruction, message}].
nlohmann::json profile_json(const CoreProfile& p);

}  // namespace trnsim::core
