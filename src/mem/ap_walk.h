// Walking an access pattern's free dims (HARDWARE.md s3: up to 4 dims of size and element
// stride, the same in every active partition). The innermost dim is handed over as one run so
// that unit-stride runs become single memcpy / convert calls.
#pragma once

#include <cstdint>

#include "isa/access_pattern.h"

namespace trnsim::mem {

// Calls fn(elem_offset, stride, count, linear) for each run of the innermost dim, in pattern
// order (outermost dim slowest). elem_offset is in elements from the pattern's origin, linear
// is the index of the run's first element in pattern order. ndim == 0 is one element.
template <typename Fn>
void for_each_run(const isa::AccessPattern& ap, Fn&& fn) {
  if (ap.ndim <= 0) {
    fn(int64_t{0}, int64_t{1}, int64_t{1}, int64_t{0});
    return;
  }
  const int inner = ap.ndim - 1;
  const int64_t stride = ap.dims[inner].stride, count = ap.dims[inner].size;
  int64_t idx[isa::kMaxFreeDims] = {0, 0, 0, 0};
  int64_t linear = 0;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < inner; ++d) off += idx[d] * ap.dims[d].stride;
    fn(off, stride, count, linear);
    linear += count;
    int d = inner - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < ap.dims[d].size) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Element offset of every element in pattern order, written to out[0 .. free_elements).
inline void element_offsets(const isa::AccessPattern& ap, int64_t* out) {
  for_each_run(ap, [&](int64_t off, int64_t stride, int64_t count, int64_t linear) {
    for (int64_t i = 0; i < count; ++i) out[linear + i] = off + i * stride;
  });
}

}  // namespace trnsim::mem
