// Device HBM: a byte store addressed by device address in [0, capacity), allocated lazily in
// pages so that a 96 GiB device costs only the pages a program touches. Bytes never written
// read as 0xFF (like SBUF/PSUM: onchip_memory.h), so reading an unwritten tensor gives NaN
// instead of plausible zeros. Reads do not allocate.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

namespace trnsim::mem {

class Hbm {
 public:
  static constexpr uint64_t kPageBytes = uint64_t{1} << 16;

  explicit Hbm(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  uint64_t capacity() const { return capacity_; }
  // Whether [address, address + n) lies inside the device.
  bool contains(uint64_t address, uint64_t n) const {
    return address <= capacity_ && n <= capacity_ - address;
  }

  // Byte copies. The range must be inside the device (callers check access patterns first;
  // a range outside is a simulator bug and asserts).
  void read(uint64_t address, void* dst, uint64_t n) const;
  void write(uint64_t address, const void* src, uint64_t n);
  void fill(uint64_t address, uint8_t byte, uint64_t n);

  size_t pages_allocated() const { return pages_.size(); }
  void clear() { pages_.clear(); }

 private:
  uint8_t* page_for_write(uint64_t page);
  const uint8_t* page_for_read(uint64_t page) const;  // nullptr: never written

  uint64_t capacity_;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
};

}  // namespace trnsim::mem
