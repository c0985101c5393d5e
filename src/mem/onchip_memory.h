// SBUF and PSUM: on-chip memories of `partitions` rows of `bytes_per_partition` bytes
// (HARDWARE.md s3). The address map is row-major: partition p's byte b is at
// p * bytes_per_partition + b. PSUM additionally splits each partition into banks (s2.2).
//
// Uninitialised memory: fresh SBUF/PSUM is filled with 0xFF bytes, which read back as NaN in
// every float format trnsim stores there (fp32 0xFFFFFFFF, bf16 0xFFFF, fp16 0xFFFF, fp8
// e4m3/e4m3fn/e5m2 0xFF are all NaN; integers read -1 / max). The hardware's power-on
// contents are not public; the NKI CPU simulator likewise fills uninitialised tensors with
// NaN-like garbage so that reads of unwritten memory are visible in results, not silent zeros.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace trnsim::mem {

inline constexpr uint8_t kUninitialisedByte = 0xFF;

class OnChipMemory {
 public:
  // bank_bytes = 0: no banks (SBUF). Otherwise bytes_per_partition is a multiple of it (PSUM).
  OnChipMemory(int partitions, int64_t bytes_per_partition, int64_t bank_bytes = 0);

  int partitions() const { return partitions_; }
  int64_t bytes_per_partition() const { return bytes_per_partition_; }
  int64_t bank_bytes() const { return bank_bytes_; }
  int banks() const {
    return bank_bytes_ == 0 ? 1 : static_cast<int>(bytes_per_partition_ / bank_bytes_);
  }

  // One partition's bytes. p must be in [0, partitions) (callers check access patterns first).
  uint8_t* row(int p) { return data_.data() + static_cast<size_t>(p) * row_stride(); }
  const uint8_t* row(int p) const { return data_.data() + static_cast<size_t>(p) * row_stride(); }
  std::span<uint8_t> bytes() { return data_; }
  std::span<const uint8_t> bytes() const { return data_; }

  // Back to the uninitialised state (every byte 0xFF).
  void clear();

 private:
  size_t row_stride() const { return static_cast<size_t>(bytes_per_partition_); }

  int partitions_;
  int64_t bytes_per_partition_;
  int64_t bank_bytes_;
  std::vector<uint8_t> data_;
};

}  // namespace trnsim::mem
