#include "mem/hbm.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "mem/onchip_memory.h"

namespace trnsim::mem {

uint8_t* Hbm::page_for_write(uint64_t page) {
  auto& slot = pages_[page];
  if (!slot) {
    slot = std::make_unique<uint8_t[]>(kPageBytes);
    std::memset(slot.get(), kUninitialisedByte, kPageBytes);
  }
  return slot.get();
}

const uint8_t* Hbm::page_for_read(uint64_t page) const {
  auto it = pages_.find(page);
  return it == pages_.end() ? nullptr : it->second.get();
}

void Hbm::read(uint64_t address, void* dst, uint64_t n) const {
  TRNSIM_ASSERT(contains(address, n));
  auto* out = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const uint64_t page = address / kPageBytes, in_page = address % kPageBytes;
    const uint64_t chunk = std::min(n, kPageBytes - in_page);
    if (const uint8_t* p = page_for_read(page))
      std::memcpy(out, p + in_page, chunk);
    else
      std::memset(out, kUninitialisedByte, chunk);
    out += chunk;
    address += chunk;
    n -= chunk;
  }
}

void Hbm::write(uint64_t address, const void* src, uint64_t n) {
  TRNSIM_ASSERT(contains(address, n));
  const auto* in = static_cast<const uint8_t*>(src);
  while (n > 0) {
    const uint64_t page = address / kPageBytes, in_page = address % kPageBytes;
    const uint64_t chunk = std::min(n, kPageBytes - in_page);
    std::memcpy(page_for_write(page) + in_page, in, chunk);
    in += chunk;
    address += chunk;
    n -= chunk;
  }
}

void Hbm::fill(uint64_t address, uint8_t byte, uint64_t n) {
  TRNSIM_ASSERT(contains(address, n));
  while (n > 0) {
    const uint64_t page = address / kPageBytes, in_page = address % kPageBytes;
    const uint64_t chunk = std::min(n, kPageBytes - in_page);
    std::memset(page_for_write(page) + in_page, byte, chunk);
    address += chunk;
    n -= chunk;
  }
}

}  // namespace trnsim::mem
