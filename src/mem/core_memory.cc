#include "mem/core_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/int128.h"

namespace trnsim::mem {

namespace {

constexpr int64_t clamp64(int128 v) {
  constexpr int128 kMax = std::numeric_limits<int64_t>::max();
  constexpr int128 kMin = std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(std::clamp(v, kMin, kMax));
}

struct Extent {
  int128 lo = 0, hi = 0;  // bytes, [lo, hi)
};

// Exact byte extent of the pattern (128-bit: sizes and strides may be as large as a hostile
// program likes).
Extent extent(const isa::AccessPattern& ap) {
  const int128 es = ap.dtype.storage_bytes;
  int128 min_el = 0, max_el = 0;
  for (int d = 0; d < ap.ndim && d < isa::kMaxFreeDims; ++d) {
    const int128 span = static_cast<int128>(ap.dims[d].size - 1) * ap.dims[d].stride;
    (span < 0 ? min_el : max_el) += span;
  }
  if (ap.space == isa::Space::kHbm) {
    const int128 span = static_cast<int128>(ap.num_partitions - 1) * ap.partition_stride;
    (span < 0 ? min_el : max_el) += span;
  }
  return {ap.offset + min_el * es, ap.offset + (max_el + 1) * es};
}

}  // namespace

CoreMemory::CoreMemory(const arch::CoreSpec& core, Hbm& hbm)
    : sbuf_(core.sbuf.partitions, core.sbuf.bytes_per_partition),
      psum_(core.psum.partitions, core.psum.banks * core.psum.bank_bytes, core.psum.bank_bytes),
      hbm_(&hbm) {}

CoreMemory::ByteRange CoreMemory::byte_range(const isa::AccessPattern& ap) {
  const Extent e = extent(ap);
  return {clamp64(e.lo), clamp64(e.hi)};
}

std::optional<Fault> CoreMemory::check(const isa::AccessPattern& ap) const {
  const bool hbm = ap.space == isa::Space::kHbm;
  Fault f;
  f.space = ap.space;
  f.p_begin = ap.start_partition;
  f.p_end = int64_t{ap.start_partition} + ap.num_partitions;
  auto fail = [&](FaultKind k, std::string msg) {
    f.kind = k;
    f.message = std::move(msg);
    return std::optional<Fault>(std::move(f));
  };

  if (ap.ndim < 0 || ap.ndim > isa::kMaxFreeDims)
    return fail(FaultKind::kBadAccessPattern, fmt::format("{} free dims (0..4 allowed)", ap.ndim));
  int128 free = 1;
  for (int d = 0; d < ap.ndim; ++d) {
    if (ap.dims[d].size < 1)
      return fail(FaultKind::kBadAccessPattern,
                  fmt::format("free dim {} has size {} (must be >= 1)", d, ap.dims[d].size));
    free *= ap.dims[d].size;
    if (free > kMaxFreeElements)
      return fail(FaultKind::kBadAccessPattern,
                  fmt::format("more than {} elements per partition", kMaxFreeElements));
  }
  if (ap.num_partitions < 1)
    return fail(FaultKind::kPartitionRange,
                fmt::format("{} partitions (must be >= 1)", ap.num_partitions));

  const Extent e = extent(ap);
  f.begin = clamp64(e.lo);
  f.end = clamp64(e.hi);
  if (hbm) {
    f.p_begin = f.p_end = 0;
    if (e.lo < 0 || e.hi > static_cast<int128>(hbm_->capacity()))
      return fail(FaultKind::kOutOfBounds,
                  fmt::format("outside device memory ({} bytes)", hbm_->capacity()));
    return std::nullopt;
  }
  const OnChipMemory& m = onchip(ap.space);
  if (ap.start_partition < 0 || int64_t{ap.start_partition} + ap.num_partitions > m.partitions())
    return fail(FaultKind::kPartitionRange,
                fmt::format("outside the {} partitions", m.partitions()));
  if (e.lo < 0 || e.hi > m.bytes_per_partition())
    return fail(FaultKind::kOutOfBounds,
                fmt::format("outside the partition ({} bytes)", m.bytes_per_partition()));
  return std::nullopt;
}

}  // namespace trnsim::mem
