// The per-engine scalar registers of the sequencers (HARDWARE.md s2: 32-bit registers for
// ALU ops, branches, dynamic addresses). The count is not public (s11 item 1); trnsim assumes
// 32 per engine, all zero at start.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace trnsim::core {

class RegisterFile {
 public:
  static constexpr int kCount = 32;

  bool valid(int r) const { return r >= 0 && r < kCount; }
  int32_t get(int r) const { return regs_[static_cast<size_t>(r)]; }
  void set(int r, int32_t v) { regs_[static_cast<size_t>(r)] = v; }
  void clear() { regs_.fill(0); }

 private:
  std::array<int32_t, kCount> regs_{};
};

}  // namespace trnsim::core
