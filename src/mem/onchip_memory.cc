#include "mem/onchip_memory.h"

#include <algorithm>

#include "base/error.h"

namespace trnsim::mem {

OnChipMemory::OnChipMemory(int partitions, int64_t bytes_per_partition, int64_t bank_bytes)
    : partitions_(partitions), bytes_per_partition_(bytes_per_partition), bank_bytes_(bank_bytes) {
  if (partitions <= 0 || bytes_per_partition <= 0 || bank_bytes < 0 ||
      (bank_bytes > 0 && bytes_per_partition % bank_bytes != 0))
    throw InputError("", "core.sbuf/core.psum",
                     "on-chip memory geometry must be positive partitions and bytes, with "
                     "partition bytes a multiple of the bank size");
  data_.assign(static_cast<size_t>(partitions) * static_cast<size_t>(bytes_per_partition),
               kUninitialisedByte);
}

void OnChipMemory::clear() { std::fill(data_.begin(), data_.end(), kUninitialisedByte); }

}  // namespace trnsim::mem
