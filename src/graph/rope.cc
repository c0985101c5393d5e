#include "graph/rope.h"

#include <fmt/format.h>

#include <cmath>
#include <numbers>

#include "base/error.h"

namespace trnsim::graph {

std::vector<double> rope_inv_freq(double theta, int64_t head_dim, const RopeScaling& s) {
  if (!s.changes_frequencies_only())
    throw InternalError(fmt::format("rope_inv_freq: rope_scaling '{}' is not modelled", s.type));
  std::vector<double> inv(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    // transformers computes the base frequencies in fp32 (torch.arange(...).float() / dim).
    const double f = static_cast<float>(
        1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim)));
    if (s.type == "linear") {
      inv[i] = f / s.factor;
    } else if (s.type == "llama3") {
      const double old = static_cast<double>(s.original_max_positions);
      const double wavelen = 2 * std::numbers::pi / f;
      const double low_wavelen = old / s.low_freq_factor, high_wavelen = old / s.high_freq_factor;
      if (wavelen > low_wavelen) {
        inv[i] = f / s.factor;
      } else if (wavelen < high_wavelen) {
        inv[i] = f;
      } else {  // between: a blend of the scaled and unscaled frequency
        const double smooth =
            (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        inv[i] = (1 - smooth) * f / s.factor + smooth * f;
      }
    } else {
      inv[i] = f;
    }
  }
  return inv;
}

}  // namespace trnsim::graph
