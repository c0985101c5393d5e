// Operands: where an instruction reads or writes, as the hardware addresses it (HARDWARE.md s3).
// On-chip (SBUF, PSUM): a run of contiguous partitions (no partition striding), and in every
// active partition the same free-dim pattern of up to 4 dims, each a size and a stride in
// ELEMENTS, starting at a BYTE offset within the partition. In HBM, the partition dim becomes
// an outer row dim with its own element stride, from a byte address in device memory.
// A dynamic operand also adds r x dyn_step bytes to the offset, r read from the issuing engine's
// scalar register dyn_reg when the instruction executes (register-relative addressing: NKI's
// register offsets, tensor_copy_dynamic_src/dst, DGE DMAs with a runtime start address). r must
// lie in 0..dyn_max, else the instruction faults (as the DGE's bounds check): validation checks
// the pattern at both ends, so every r allowed stays inside memory.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "numerics/format.h"

namespace trnsim::isa {

enum class Space : uint8_t { kSbuf, kPsum, kHbm };

constexpr std::string_view space_name(Space s) {
  return s == Space::kSbuf ? "sbuf" : s == Space::kPsum ? "psum" : "hbm";
}

inline constexpr int kMaxFreeDims = 4;

struct FreeDim {
  int64_t stride = 1;  // elements (int16 in hardware: -32768..32767)
  int64_t size = 1;    // elements (uint16 in hardware: 1..65535)
  bool operator==(const FreeDim&) const = default;
};

// No implicit padding: the `reserved` members fill the gaps and stay zero, so that the bytes
// before `offset` are equal exactly when those fields are (the timing model's pricing memo
// compares them as bytes: core/timing/timing_program.cc; tests/cpp/isa/layout_test.cc checks).
struct AccessPattern {
  Space space = Space::kSbuf;
  int8_t dyn_reg = -1;  // >= 0: a dynamic operand (above); the scalar register it reads
  num::Format dtype = num::fp32();
  std::array<uint8_t, 2> reserved1{};
  int32_t start_partition = 0;   // SBUF/PSUM: first partition; HBM: 0
  int32_t num_partitions = 1;    // SBUF/PSUM: partitions; HBM: rows
  int64_t partition_stride = 0;  // HBM only: elements from one row to the next
  int64_t offset = 0;            // bytes: within each partition (SBUF/PSUM) or device address (HBM)
  std::array<FreeDim, kMaxFreeDims> dims{};  // outermost first; dims[0..ndim)
  int32_t ndim = 0;
  int32_t dyn_max = 0;   // the largest register value a dynamic operand accepts
  int64_t dyn_step = 0;  // bytes the offset moves per register unit

  bool operator==(const AccessPattern&) const = default;

  static constexpr int64_t kElementCap = int64_t{1} << 62;
  static constexpr int64_t saturating_product(int64_t a, int64_t b) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r) || r > kElementCap || r < -kElementCap)
      return (a < 0) != (b < 0) ? -kElementCap : kElementCap;
    return r;
  }

  // Elements per partition (product of free sizes; 1 when ndim == 0). Saturating at 2^62: four
  // in-range sizes (65535 each) already overflow int64 in product, and validation reads this
  // before it knows the pattern fits anywhere.
  int64_t free_elements() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n = saturating_product(n, dims[i].size);
    return n;
  }
  int64_t elements() const { return saturating_product(free_elements(), num_partitions); }
  bool dynamic() const { return dyn_reg >= 0; }
  // The static operand a dynamic one addresses when its register holds r (r unchecked; an
  // offset past int64 saturates, so that validation and the bounds checks refuse it).
  AccessPattern at(int64_t r) const {
    AccessPattern a = *this;
    const int64_t move = saturating_product(r, dyn_step);
    if (__builtin_add_overflow(offset, move, &a.offset))
      a.offset = move < 0 ? -kElementCap : kElementCap;
    a.dyn_reg = -1;
    a.dyn_max = 0;
    a.dyn_step = 0;
    return a;
  }

  // Whether the innermost dim is unit-stride (or there is at most one element per partition).
  bool contiguous_inner() const { return ndim == 0 || dims[ndim - 1].stride == 1; }
};

}  // namespace trnsim::isa
