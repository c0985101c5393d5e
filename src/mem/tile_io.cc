#include "mem/tile_io.h"

#include <cstring>

#include "base/error.h"
#include "mem/ap_walk.h"

namespace trnsim::mem {

namespace {

bool is_fp32(const num::Format& f) { return f.dtype == num::Dtype::kFp32; }

// Row r's elements, packed in pattern order into dst (free_elements * storage_bytes bytes).
void gather_row(const CoreMemory& m, const isa::AccessPattern& ap, int64_t r, uint8_t* dst) {
  const int64_t es = ap.dtype.storage_bytes;
  if (ap.space == isa::Space::kHbm) {
    const int64_t base = ap.offset + r * ap.partition_stride * es;
    for_each_run(ap, [&](int64_t off, int64_t stride, int64_t count, int64_t linear) {
      uint8_t* out = dst + linear * es;
      if (stride == 1) {
        m.hbm().read(static_cast<uint64_t>(base + off * es), out,
                     static_cast<uint64_t>(count * es));
        return;
      }
      for (int64_t i = 0; i < count; ++i)
        m.hbm().read(static_cast<uint64_t>(base + (off + i * stride) * es), out + i * es,
                     static_cast<uint64_t>(es));
    });
    return;
  }
  const uint8_t* row = m.onchip(ap.space).row(static_cast<int>(ap.start_partition + r));
  for_each_run(ap, [&](int64_t off, int64_t stride, int64_t count, int64_t linear) {
    uint8_t* out = dst + linear * es;
    if (stride == 1) {
      std::memcpy(out, row + (ap.offset + off * es), static_cast<size_t>(count * es));
      return;
    }
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(out + i * es, row + (ap.offset + (off + i * stride) * es),
                  static_cast<size_t>(es));
  });
}

// The inverse of gather_row.
void scatter_row(CoreMemory& m, const isa::AccessPattern& ap, int64_t r, const uint8_t* src) {
  const int64_t es = ap.dtype.storage_bytes;
  if (ap.space == isa::Space::kHbm) {
    const int64_t base = ap.offset + r * ap.partition_stride * es;
    for_each_run(ap, [&](int64_t off, int64_t stride, int64_t count, int64_t linear) {
      const uint8_t* in = src + linear * es;
      if (stride == 1) {
        m.hbm().write(static_cast<uint64_t>(base + off * es), in,
                      static_cast<uint64_t>(count * es));
        return;
      }
      for (int64_t i = 0; i < count; ++i)
        m.hbm().write(static_cast<uint64_t>(base + (off + i * stride) * es), in + i * es,
                      static_cast<uint64_t>(es));
    });
    return;
  }
  uint8_t* row = m.onchip(ap.space).row(static_cast<int>(ap.start_partition + r));
  for_each_run(ap, [&](int64_t off, int64_t stride, int64_t count, int64_t linear) {
    const uint8_t* in = src + linear * es;
    if (stride == 1) {
      std::memmove(row + (ap.offset + off * es), in, static_cast<size_t>(count * es));
      return;
    }
    for (int64_t i = 0; i < count; ++i)
      std::memmove(row + (ap.offset + (off + i * stride) * es), in + i * es,
                   static_cast<size_t>(es));
  });
}

}  // namespace

void read_tile(const CoreMemory& m, const isa::AccessPattern& ap, Tile& out, IoScratch& s,
               const num::NumericPolicy& policy) {
  const int64_t rows = ap.num_partitions, cols = ap.free_elements();
  out.resize(rows, cols);
  if (is_fp32(ap.dtype)) {
    // FP32 is the working format: copy bits, keeping NaN payloads as stored.
    for (int64_t r = 0; r < rows; ++r) gather_row(m, ap, r, reinterpret_cast<uint8_t*>(out.row(r)));
    return;
  }
  // Decoding is exact (or, for 32-bit integers, a single rounding): never flush inputs.
  num::RoundOptions ro;
  ro.policy = policy;
  ro.policy.flush_subnormals = false;
  s.bytes.resize(static_cast<size_t>(cols * ap.dtype.storage_bytes));
  for (int64_t r = 0; r < rows; ++r) {
    gather_row(m, ap, r, s.bytes.data());
    num::convert(ap.dtype, s.bytes.data(), num::fp32(), out.row(r), static_cast<size_t>(cols), ro);
  }
}

void write_tile(CoreMemory& m, const isa::AccessPattern& ap, const Tile& in, IoScratch& s,
                const num::RoundOptions& opts) {
  const int64_t rows = ap.num_partitions, cols = ap.free_elements();
  TRNSIM_ASSERT(in.rows == rows && in.cols == cols);
  if (is_fp32(ap.dtype)) {
    for (int64_t r = 0; r < rows; ++r)
      scatter_row(m, ap, r, reinterpret_cast<const uint8_t*>(in.row(r)));
    return;
  }
  num::RoundOptions ro = opts;
  s.bytes.resize(static_cast<size_t>(cols * ap.dtype.storage_bytes));
  for (int64_t r = 0; r < rows; ++r) {
    ro.index_base = opts.index_base + static_cast<uint64_t>(r * cols);
    num::convert(num::fp32(), in.row(r), ap.dtype, s.bytes.data(), static_cast<size_t>(cols), ro);
    scatter_row(m, ap, r, s.bytes.data());
  }
}

void read_codes(const CoreMemory& m, const isa::AccessPattern& ap, std::vector<uint8_t>& out) {
  const int64_t rows = ap.num_partitions, row_bytes = ap.free_elements() * ap.dtype.storage_bytes;
  out.resize(static_cast<size_t>(rows * row_bytes));
  for (int64_t r = 0; r < rows; ++r) gather_row(m, ap, r, out.data() + r * row_bytes);
}

void write_codes(CoreMemory& m, const isa::AccessPattern& ap, const uint8_t* codes) {
  const int64_t rows = ap.num_partitions, row_bytes = ap.free_elements() * ap.dtype.storage_bytes;
  for (int64_t r = 0; r < rows; ++r) scatter_row(m, ap, r, codes + r * row_bytes);
}

}  // namespace trnsim::mem
