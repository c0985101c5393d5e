// Where MX scales live (HARDWARE.md s5, AG4): a block is 32 elements along K = 8 partitions x 4
// elements packed in the innermost free dim, and within each quadrant of 32 partitions the
// scales of its 4 blocks occupy the quadrant's first 4 partitions. So the scale of data
// partition p (relative to the operand's first partition) and packed group g is element
// [mx_scale_row(p), g] of the scale operand. Scale codes are E8M0 (float8_e8m0fnu) or uint8
// holding the same bits (legacy): the factor is 2^(code - 127), code 255 is NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace trnsim::core {

inline constexpr int64_t kMxPartitionsPerBlock = 8;
inline constexpr int64_t kMxPack = 4;

constexpr int64_t mx_scale_row(int64_t p) {
  return 32 * (p / 32) + (p % 32) / kMxPartitionsPerBlock;
}

// Scale rows a [partitions]-row MX operand needs.
constexpr int64_t mx_scale_rows(int64_t partitions) { return mx_scale_row(partitions - 1) + 1; }

inline double mx_scale_factor(uint8_t code) {
  return code == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, code - 127);
}

}  // namespace trnsim::core
