// Energy of a run: a documented power model over what the simulation counted.
//
//   E = static_w x chips x seconds                          (the chips powered)
//     + tensor_busy_w x FLOPs / bf16 peak                   (TensorE busy, in chip-seconds)
//     + hbm_pj_per_byte x HBM bytes read and written
//     + link_pj_per_byte x bytes the collectives send between chips
//
// Per-chip values are spec data (`chip.power.*`, each sourced or marked as an assumption).
// tensor_busy_w is derived, not given: what is left of the chip's full-load power (tdp_w) once
// static power, HBM at its peak bandwidth and the links at theirs are paid; so a chip running
// its TensorE flat out while streaming HBM and links at their peaks draws exactly tdp_w. The
// engines other than TensorE (VectorE, ScalarE, GpSimd, DMA) and SBUF traffic are inside the
// static power and the FLOP term, not counted apart. Units: joules, watts, seconds, bytes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "arch/arch.h"

namespace trnsim::planner {

struct PowerModel {
  std::string chip;
  double tdp_w = 0, static_w = 0, tensor_busy_w = 0;
  double hbm_j_per_byte = 0, link_j_per_byte = 0;
  double bf16_flops_per_s = 0;  // the chip's published dense BF16 peak
  nlohmann::json to_json() const;
};

// Throws InputError naming the chip and key when chip.power is incomplete, or when static,
// HBM and link power at their peaks leave nothing (or less) for TensorE under tdp_w.
PowerModel power_model(const arch::ChipSpec& chip);
// The same, or nothing when the chip has no chip.power key at all (energy figures left out);
// some keys without the others are refused as above.
std::optional<PowerModel> power_model_if_any(const arch::ChipSpec& chip);

struct Energy {
  double seconds = 0;
  int64_t chips = 0;
  double static_j = 0, tensor_j = 0, hbm_j = 0, link_j = 0;
  double joules() const { return static_j + tensor_j + hbm_j + link_j; }
  double mean_power_w() const { return seconds > 0 ? joules() / seconds : 0.0; }
  Energy& operator+=(const Energy& o);
  nlohmann::json to_json() const;
};

Energy scaled(Energy e, double f);  // every term and the time times f

// Serving results' energy keys (null without a power model): energy, power_model,
// joules_per_output_token, output_tokens_per_s_per_mw.
void add_energy_json(nlohmann::json& out, const std::optional<Energy>& e,
                     const std::optional<PowerModel>& p, double joules_per_output_token,
                     double output_tokens_per_s_per_mw);

// `flops`: useful FLOPs of all the chips (bf16); `hbm_bytes`: all chips' HBM reads and writes;
// `link_bytes`: what the chips send to one another.
Energy energy_of(const PowerModel& p, double seconds, int64_t chips, double flops, double hbm_bytes,
                 double link_bytes);

}  // namespace trnsim::planner
