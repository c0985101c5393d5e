// The TensorE's stationary state: load_stationary caches a [K, M] matrix in the PEs of one
// tile position (rows = contraction, columns = output partitions; HARDWARE.md s2.1), and later
// multiply_moving instructions at that position use it. Small tiles at disjoint positions
// coexist; loading a tile evicts every cached tile whose PE rectangle it overlaps.
#pragma once

#include <cstdint>
#include <vector>

#include "numerics/format.h"

namespace trnsim::core {

struct StationaryTile {
  int row = 0, col = 0;     // PE tile position (first row, first column)
  int rows = 0, cols = 0;   // PE tile size
  int64_t k = 0, m = 0;     // contraction length (256 for double-row FP8) x columns
  num::Format dtype;        // the stationary operand's dtype (fp32/tf32 pairing rule)
  bool double_row = false;  // loaded with perf_mode double_row (K = 2 x partitions)
  std::vector<float> w;     // [k][m], decoded to FP32
};

class PeArray {
 public:
  // The slot for a tile at (row, col) of size rows x cols, after evicting every other cached
  // tile it overlaps. A tile previously cached at the same place keeps its buffer (steady-state
  // loads do not allocate); the caller fills k, m, dtype and w.
  StationaryTile& slot(int row, int col, int rows, int cols);
  // The tile cached at exactly this position, or nullptr.
  const StationaryTile* at(int row, int col) const;
  void clear() { tiles_.clear(); }

 private:
  std::vector<StationaryTile> tiles_;
};

}  // namespace trnsim::core
