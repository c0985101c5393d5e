#include "kernel/footprint.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace trnsim::kernel {

namespace {

struct Reach {
  int64_t lo = 0, hi = 0;  // elements, relative to the first element
  void add(const ViewDim& d) { (d.stride < 0 ? lo : hi) += d.stride * (d.size - 1); }
};

}  // namespace

Footprint footprint(const View& v) {
  const Region& r = v.region();
  const int64_t es = v.dtype().storage_bytes;
  Footprint f;
  f.key.space = v.space();
  // A dynamic view may sit anywhere its register's range moves it: as if it had one more dim.
  const DynamicOffset& dyn = v.dynamic_offset();
  const ViewDim moves{v.is_dynamic() ? int64_t{dyn.max} + 1 : 1, dyn.step};
  if (v.on_chip()) {
    Reach reach;
    for (size_t i = 1; i < v.dims().size(); ++i) reach.add(v.dims()[i]);
    reach.add(moves);
    const int64_t first = r.base / es + v.offset();  // elements from byte 0 of the partition
    f.rect = {v.start_partition(), v.start_partition() + v.partitions(), (first + reach.lo) * es,
              (first + reach.hi + 1) * es};
    return f;
  }
  f.key.tensor = r.tensor;
  const int64_t row = std::max<int64_t>(r.row_elements, 1);
  // Dims whose stride is whole rows move between rows; the others move within one.
  Reach rows, cols;
  for (const ViewDim& d : v.dims()) (d.stride % row == 0 ? rows : cols).add(d);
  (moves.stride % row == 0 ? rows : cols).add(moves);
  const int64_t o = v.offset();
  const int64_t c_lo = o % row + cols.lo, c_hi = o % row + cols.hi + 1;
  if (c_lo >= 0 && c_hi <= row) {
    f.rect = {o / row + rows.lo / row, o / row + rows.hi / row + 1, c_lo * es, c_hi * es};
  } else {  // the pattern wraps around rows: take whole rows
    const int64_t lo = o + rows.lo + cols.lo, hi = o + rows.hi + cols.hi + 1;
    f.rect = {lo / row, (hi - 1) / row + 1, 0, row * es};
  }
  return f;
}

bool fills_footprint(const View& v) {
  if (v.is_dynamic()) return false;  // it writes one place of the range it may reach
  std::vector<ViewDim> d;
  for (size_t i = v.on_chip() ? 1 : 0; i < v.dims().size(); ++i)
    if (v.dims()[i].size > 1) d.push_back({v.dims()[i].size, std::abs(v.dims()[i].stride)});
  std::sort(d.begin(), d.end(),
            [](const ViewDim& a, const ViewDim& b) { return a.stride < b.stride; });
  int64_t next = 1;
  for (const ViewDim& x : d) {
    if (x.stride != next) return false;
    next *= x.size;
  }
  return true;
}

}  // namespace trnsim::kernel
