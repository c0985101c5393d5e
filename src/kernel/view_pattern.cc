// Explicit access patterns and reinterpreting casts of views: NKI's tensor.ap() and
// tensor.view(dtype), for the accesses that slicing cannot express.
#include <fmt/format.h>

#include "base/error.h"
#include "kernel/view.h"

namespace trnsim::kernel {

namespace {

[[noreturn]] void fail(const View& v, const std::string& what, const std::string& detail) {
  throw InputError("kernel view", fmt::format("{} of {}", what, v.describe()), detail);
}

int64_t product(const std::vector<int64_t>& shape, size_t first) {
  int64_t n = 1;
  for (size_t i = first; i < shape.size(); ++i) n *= shape[i];
  return n;
}

}  // namespace

View View::pattern(int64_t offset, const std::vector<ViewDim>& dims) const {
  if (dims.empty()) fail(*this, "access pattern", "no dims");
  const Region& r = region();
  const bool chip = on_chip();
  // Elements per partition on chip (the partition dim's required stride); all of them in HBM.
  const int64_t row = product(r.shape, chip ? 1 : 0);
  const int64_t total = chip ? row * r.shape[0] : row;
  // The lowest and highest element the pattern reaches: a negative step walks downwards
  // (t[-1 * nl.arange(2) + 1]), which the engines and DMA take as any other step.
  int64_t lo = offset, hi = offset, inner_lo = 0, inner_hi = 0;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].size < 1)
      fail(*this, "access pattern",
           fmt::format("dim {}: [{}, {}]: sizes >= 1", i, dims[i].stride, dims[i].size));
    const int64_t span = (dims[i].size - 1) * dims[i].stride;
    (span < 0 ? lo : hi) += span;
    if (i > 0 || !chip) (span < 0 ? inner_lo : inner_hi) += span;
  }
  if (lo < 0 || hi >= total)
    fail(*this, "access pattern",
         fmt::format("reaches element {} (offset {}); the region has {}", lo < 0 ? lo : hi, offset,
                     total));
  if (!chip) return View(region_, 0, offset, dims);
  if (dims[0].size > 1 && dims[0].stride != row)
    fail(*this, "access pattern",
         fmt::format("partition step {}: partitions are contiguous, the step must be {} (the "
                     "elements per partition)",
                     dims[0].stride, row));
  std::vector<ViewDim> d = dims;
  d[0] = {dims[0].size, 1};
  const int64_t start = offset / row;
  if (start + d[0].size > r.shape[0] || offset % row + inner_lo < 0 ||
      offset % row + inner_hi >= row)
    fail(*this, "access pattern", "the pattern crosses a partition boundary");
  return View(region_, start, offset % row, std::move(d));
}

View View::bitcast(num::Format dtype) const {
  if (is_dynamic()) fail(*this, "view as " + dtype.name(), "a dynamic view keeps its dtype");
  const int64_t from = this->dtype().storage_bytes, to = dtype.storage_bytes;
  if (from == to) {
    auto r = std::make_shared<Region>(region());
    r->dtype = dtype;
    return View(std::move(r), start_partition_, offset_, dims_);
  }
  const size_t first = on_chip() ? 1 : 0;
  if (dims_.size() <= first || dims_.back().stride != 1)
    fail(*this, "view as " + dtype.name(), "the innermost dim must be contiguous");
  auto scale = [&](int64_t n, const char* what) {
    if ((n * from) % to != 0)
      fail(*this, "view as " + dtype.name(),
           fmt::format("{} {} x {} bytes is not a whole number of {}-byte elements", what, n, from,
                       to));
    return n * from / to;
  };
  std::vector<ViewDim> d = dims_;
  for (size_t i = first; i + 1 < d.size(); ++i)
    d[i].stride = d[i].stride == 0 ? 0 : scale(d[i].stride, "stride");
  d.back() = {scale(d.back().size, "size"), 1};
  auto r = std::make_shared<Region>(region());
  r->dtype = dtype;
  if (!r->shape.empty()) r->shape.back() = scale(r->shape.back(), "declared size");
  if (!on_chip() && r->shape.size() >= 2) r->row_elements = scale(r->row_elements, "row");
  return View(std::move(r), start_partition_, scale(offset_, "offset"), std::move(d));
}

}  // namespace trnsim::kernel
