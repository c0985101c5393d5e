// Host tensors of the model runner (value_runner.h) split and joined by columns: a
// horizontally fused linear's weights are its members' side by side, its results theirs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace trnsim::graph {

// [rows, N_i] row-major blocks side by side: [rows, sum N_i].
inline std::vector<float> concat_columns(const std::vector<const std::vector<float>*>& parts,
                                         const std::vector<int64_t>& widths, int64_t rows) {
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  std::vector<float> out(static_cast<size_t>(rows * total));
  int64_t c0 = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(parts[p]->begin() + r * widths[p], widths[p], out.begin() + r * total + c0);
    c0 += widths[p];
  }
  return out;
}

// The inverse: [rows, sum N_i] into its blocks of widths N_i.
inline std::vector<std::vector<float>> split_columns(const std::vector<float>& all,
                                                     const std::vector<int64_t>& widths,
                                                     int64_t rows) {
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  std::vector<std::vector<float>> out;
  int64_t c0 = 0;
  for (int64_t w : widths) {
    std::vector<float> part(static_cast<size_t>(rows * w));
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(all.begin() + r * total + c0, w, part.begin() + r * w);
    out.push_back(std::move(part));
    c0 += w;
  }
  return out;
}

}  // namespace trnsim::graph
