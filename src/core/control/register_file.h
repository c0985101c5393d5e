// The per-engine scalar registers of the sequencers (HARDWARE.md s2: 32-bit registers for
// ALU ops, branches, dynamic addresses): 64 per engine sequencer (isa::kScalarRegisters, from the
// NKI API reference), all zero at start.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "isa/instruction.h"

namespace trnsim::core {

class RegisterFile {
 public:
  static constexpr int kCount = isa::kScalarRegisters;

  bool valid(int r) const { return r >= 0 && r < kCount; }
  int32_t get(int r) const { return regs_[static_cast<size_t>(r)]; }
  void set(int r, int32_t v) { regs_[static_cast<size_t>(r)] = v; }
  void clear() { regs_.fill(0); }

 private:
  std::array<int32_t, kCount> regs_{};
};

}  // namespace trnsim::core
