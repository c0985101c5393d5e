// Rotary position embedding frequencies (RoPE), with the context-extension rescalings of
// transformers' ROPE_INIT_FUNCTIONS that change only the frequencies: "linear" (position
// interpolation: every frequency / factor) and "llama3" (Llama 3.1+: long wavelengths / factor,
// short ones kept, a smooth blend between). Others ("dynamic", "yarn", "longrope") also change
// the tables with the sequence length or scale the attention; their names are kept so that a
// run asking for values can refuse them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trnsim::graph {

struct RopeScaling {
  std::string type = "default";  // config.json rope_scaling.rope_type (or .type)
  double factor = 1.0;
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_max_positions = 8192;                 // llama3: the pretraining context
  bool changes_frequencies_only() const {
    return type == "default" || type == "linear" || type == "llama3";
  }
};

// The head_dim / 2 inverse frequencies theta^(-2i / head_dim) (radians per position), rescaled.
// Throws InternalError for a type that changes_frequencies_only() refuses.
std::vector<double> rope_inv_freq(double theta, int64_t head_dim, const RopeScaling& s);

}  // namespace trnsim::graph
