#include "profile/roofline.h"

#include <algorithm>

namespace trnsim::profile {

Roofline roofline(const RooflineInput& in) {
  Roofline r;
  r.flops = in.flops;
  r.issued_flops = std::max(in.issued_flops, in.flops);
  r.hbm_bytes = in.hbm_bytes;
  r.peak_flops = in.peak_flops;
  r.hbm_peak = in.hbm_peak;
  const double s = static_cast<double>(in.time.v) * 1e-12;
  if (s > 0) {
    r.achieved_flops = r.flops / s;
    r.hbm_bytes_per_s = r.hbm_bytes / s;
    r.mfu_dtype = in.seconds_at_peak / s;
    if (in.peak_flops > 0) {
      r.mfu = r.flops / (s * in.peak_flops);
      r.hfu = r.issued_flops / (s * in.peak_flops);
    }
    if (in.hbm_peak > 0) r.hbm_share = r.hbm_bytes_per_s / in.hbm_peak;
  }
  if (r.hbm_bytes > 0) r.intensity = r.flops / r.hbm_bytes;
  if (in.hbm_peak > 0) r.ridge = in.peak_flops / in.hbm_peak;
  if (r.flops > 0 && r.hbm_bytes > 0) {
    r.attainable_flops = std::min(in.peak_flops, r.intensity * in.hbm_peak);
    r.roof = r.intensity >= r.ridge ? "compute" : "memory";
  } else if (r.flops > 0) {
    r.attainable_flops = in.peak_flops;
    r.roof = "compute";
  } else {
    r.roof = r.hbm_bytes > 0 ? "memory" : "none";
  }
  // HBM counts as a unit of its own: the run is HBM-bound when it draws a larger share of
  // HBM's ceiling than any unit is busy.
  const double best = std::max(in.bound_share, r.hbm_share);
  if (s <= 0)
    r.verdict = "none";  // nothing ran
  else if (best < in.latency_below)
    r.verdict = "latency";
  else
    r.verdict = r.hbm_share > in.bound_share ? "hbm" : in.bound;
  return r;
}

}  // namespace trnsim::profile
