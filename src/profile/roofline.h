// A run on the roofline: its work against the machine's two ceilings, compute (peak FLOP/s)
// and memory (HBM bytes/s), with the utilisations neuron-profile reports: MFU (useful matmul
// FLOPs / (time x peak)) and HFU (every FLOP the matrix unit computed, transposes included).
// Plain numbers in, so any simulated component can fill it (profile depends only on sim);
// the NeuronCore's are filled by core/timing/timing_profile.h.
#pragma once

#include <string>

#include "base/units.h"

namespace trnsim::profile {

struct RooflineInput {
  Picoseconds time;            // the run
  double flops = 0;            // useful FLOPs (matmuls)
  double issued_flops = 0;     // every FLOP the matrix unit computed (>= flops)
  double peak_flops = 0;       // FLOP/s: the reference peak (BF16)
  double seconds_at_peak = 0;  // the matrix unit's time at the full rate of each op's dtype
  double hbm_bytes = 0;        // read + written
  double hbm_peak = 0;         // bytes/s: what the run can draw from HBM at most
  // The busiest unit otherwise (its name and busy share of the run, from the run's bound),
  // and the verdict's floor: below it nothing bounds the run ("latency").
  std::string bound;
  double bound_share = 0;
  double latency_below = 0.5;
};

struct Roofline {
  double flops = 0, issued_flops = 0, hbm_bytes = 0;
  double intensity = 0;       // FLOPs per HBM byte (0 without HBM traffic)
  double achieved_flops = 0;  // FLOP/s over the run
  double peak_flops = 0;
  double mfu = 0;              // flops / (time x peak)
  double hfu = 0;              // issued_flops / (time x peak)
  double mfu_dtype = 0;        // seconds_at_peak / time: MFU against each op's dtype peak
  double hbm_bytes_per_s = 0;  // achieved
  double hbm_peak = 0;
  double hbm_share = 0;         // achieved / peak
  double ridge = 0;             // peak_flops / hbm_peak: the intensity where the roofs meet
  double attainable_flops = 0;  // min(peak, intensity x hbm_peak)
  // "compute" when the intensity is at or past the ridge, else "memory": which roof is over
  // the kernel ("none" without FLOPs or HBM traffic).
  std::string roof;
  // What bounds the run: the input's bound, or "hbm" when HBM's share of its ceiling is the
  // larger one (both floored: "latency" below latency_below).
  std::string verdict;
};

Roofline roofline(const RooflineInput& in);

}  // namespace trnsim::profile
