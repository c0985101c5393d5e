// The engines' working form of an operand: an FP32 matrix [partitions][free elements],
// row-major and contiguous so that inner loops run over plain float arrays. Engines compute
// in FP32 with casts in and out (HARDWARE.md s2.3, s5); tile_io.h does those casts.
#pragma once

#include <cstdint>
#include <vector>

namespace trnsim::mem {

struct Tile {
  int64_t rows = 0;  // partitions (HBM: rows)
  int64_t cols = 0;  // free elements per partition, in access-pattern order
  std::vector<float> data;

  // Reshape without shrinking the buffer: tiles are reused across instructions, so steady
  // state execution does not allocate.
  void resize(int64_t r, int64_t c) {
    rows = r;
    cols = c;
    const auto n = static_cast<size_t>(r * c);
    if (data.size() < n) data.resize(n);
  }
  void fill(float v) {
    for (int64_t i = 0; i < rows * cols; ++i) data[static_cast<size_t>(i)] = v;
  }
  float* row(int64_t r) { return data.data() + r * cols; }
  const float* row(int64_t r) const { return data.data() + r * cols; }
  float& at(int64_t r, int64_t c) { return data[static_cast<size_t>(r * cols + c)]; }
  float at(int64_t r, int64_t c) const { return data[static_cast<size_t>(r * cols + c)]; }
  int64_t size() const { return rows * cols; }
};

}  // namespace trnsim::mem
