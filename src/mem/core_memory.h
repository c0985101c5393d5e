// The memories one NeuronCore's instructions address: its SBUF and PSUM, and the device HBM
// it shares with the other cores of the chip. The bounds rules of access patterns live here:
// check() is called for every operand before an instruction touches memory, so that every
// later read and write is in range by construction.
#pragma once

#include <cstdint>
#include <optional>

#include "arch/core_spec.h"
#include "isa/access_pattern.h"
#include "mem/fault.h"
#include "mem/hbm.h"
#include "mem/onchip_memory.h"

namespace trnsim::mem {

// Largest number of elements per partition an access pattern may name. Real patterns are far
// smaller (an SBUF partition is at most 256 KiB); the cap keeps stride-0 broadcasts of absurd
// size from allocating gigabytes of working tile.
inline constexpr int64_t kMaxFreeElements = int64_t{1} << 24;

class CoreMemory {
 public:
  // SBUF and PSUM geometry from the core spec; `hbm` is the device's, shared by its cores.
  CoreMemory(const arch::CoreSpec& core, Hbm& hbm);

  OnChipMemory& sbuf() { return sbuf_; }
  const OnChipMemory& sbuf() const { return sbuf_; }
  OnChipMemory& psum() { return psum_; }
  const OnChipMemory& psum() const { return psum_; }
  Hbm& hbm() { return *hbm_; }
  const Hbm& hbm() const { return *hbm_; }
  // SBUF or PSUM (not HBM).
  OnChipMemory& onchip(isa::Space s) { return s == isa::Space::kPsum ? psum_ : sbuf_; }
  const OnChipMemory& onchip(isa::Space s) const { return s == isa::Space::kPsum ? psum_ : sbuf_; }

  // A fault if `ap` is malformed or reaches outside its memory (partitions, bytes), else
  // nothing. The fault carries space, partition and byte ranges; the caller names the
  // instruction.
  std::optional<Fault> check(const isa::AccessPattern& ap) const;

  // Byte range [lo, hi) the pattern touches within each partition (SBUF/PSUM) or in the
  // device (HBM). Only meaningful for a pattern check() accepted, or to describe one it did not.
  struct ByteRange {
    int64_t lo = 0, hi = 0;
  };
  static ByteRange byte_range(const isa::AccessPattern& ap);

 private:
  OnChipMemory sbuf_, psum_;
  Hbm* hbm_;
};

}  // namespace trnsim::mem
