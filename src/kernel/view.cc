#include "kernel/view.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

#include "base/error.h"
#include "isa/instruction.h"

namespace trnsim::kernel {

namespace {

// Drops size-1 dims and merges an outer dim into the next inner one where the pair walks
// memory as one dim (outer stride = inner stride x inner size).
std::vector<ViewDim> merge_dims(const std::vector<ViewDim>& dims) {
  std::vector<ViewDim> out;
  for (const ViewDim& d : dims) {
    if (d.size == 1) continue;
    if (!out.empty() && out.back().stride == d.stride * d.size)
      out.back() = {out.back().size * d.size, d.stride};
    else
      out.push_back(d);
  }
  return out;
}

[[noreturn]] void fail(const View& v, const std::string& what, const std::string& detail) {
  throw InputError("kernel view", fmt::format("{} of {}", what, v.describe()), detail);
}

}  // namespace

View::View(std::shared_ptr<const Region> region, int64_t start_partition, int64_t offset,
           std::vector<ViewDim> dims)
    : region_(std::move(region)),
      start_partition_(start_partition),
      offset_(offset),
      dims_(std::move(dims)) {}

std::vector<int64_t> View::shape() const {
  std::vector<int64_t> s;
  for (const ViewDim& d : dims_) s.push_back(d.size);
  return s;
}

int64_t View::partitions() const {
  if (on_chip()) return dims_.empty() ? 1 : dims_[0].size;
  return dims_.size() >= 2 ? dims_[0].size : 1;
}

int64_t View::free_elements() const {
  const size_t first = (on_chip() || dims_.size() >= 2) ? 1 : 0;
  int64_t n = 1;
  for (size_t i = first; i < dims_.size(); ++i) n *= dims_[i].size;
  return n;
}

bool View::has_zero_stride() const {
  for (size_t i = on_chip() ? 1 : 0; i < dims_.size(); ++i)
    if (dims_[i].stride == 0 && dims_[i].size > 1) return true;
  return false;
}

View View::operator()(Idx a) const { return index({a}); }
View View::operator()(Idx a, Idx b) const { return index({a, b}); }
View View::operator()(Idx a, Idx b, Idx c) const { return index({a, b, c}); }
View View::operator()(Idx a, Idx b, Idx c, Idx d) const { return index({a, b, c, d}); }
View View::operator()(Idx a, Idx b, Idx c, Idx d, Idx e) const { return index({a, b, c, d, e}); }

View View::index(const std::vector<Idx>& idx) const {
  if (idx.size() > dims_.size())
    fail(*this, "index", fmt::format("{} indices for {} dims", idx.size(), dims_.size()));
  View v = *this;
  v.dims_.clear();
  for (size_t d = 0; d < dims_.size(); ++d) {
    const ViewDim dim = dims_[d];
    const Idx ix = d < idx.size() ? idx[d] : Idx(all);
    const bool partition_dim = on_chip() && d == 0;
    if (ix.whole) {
      v.dims_.push_back(dim);
      continue;
    }
    if (ix.begin < 0 || ix.end > dim.size || ix.begin >= ix.end || ix.step < 1)
      fail(*this, "index",
           fmt::format("dim {}: [{}:{}:{}] outside [0, {})", d, ix.begin, ix.end, ix.step,
                       dim.size));
    if (partition_dim) {
      if (ix.step != 1)
        fail(*this, "index", "a step on the partition dim: partitions are contiguous");
      v.start_partition_ += ix.begin;
      v.dims_.push_back({ix.end - ix.begin, 1});
      continue;
    }
    v.offset_ += ix.begin * dim.stride;
    if (!ix.single)
      v.dims_.push_back({(ix.end - ix.begin + ix.step - 1) / ix.step, dim.stride * ix.step});
  }
  return v;
}

View View::reshape(const std::vector<int64_t>& shape) const {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s < 1) fail(*this, "reshape", fmt::format("size {} < 1", s));
    n *= s;
  }
  if (n != elements())
    fail(*this, "reshape", fmt::format("{} elements into {}", elements(), fmt::join(shape, "x")));
  const size_t first = on_chip() ? 1 : 0;
  if (on_chip() && (shape.empty() || shape[0] != partitions()))
    fail(*this, "reshape", "the partition dim cannot change");
  // numpy's no-copy reshape: the old free dims (size-1 ones dropped: they have no stride)
  // and the new ones matched in groups of equal element count; each old group must be one
  // run (its dims merge), and the new group's strides are laid out over that run. So a
  // strided slice may gain or lose unit dims, or split a dim, without being contiguous.
  std::vector<ViewDim> old;
  for (size_t d = first; d < dims_.size(); ++d)
    if (dims_[d].size != 1) old.push_back(dims_[d]);
  std::vector<ViewDim> dims(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) dims[i] = {shape[i], 1};
  size_t oi = 0, ni = first;
  while (oi < old.size() && ni < shape.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t op = old[oi].size, np = shape[ni];
    while (np != op) {
      if (np < op ? nj >= shape.size() : oj >= old.size())  // unreachable: the counts agree
        fail(*this, "reshape", "the element counts do not match");
      if (np < op)
        np *= shape[nj++];
      else
        op *= old[oj++].size;
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (old[k].stride != old[k + 1].stride * old[k + 1].size)
        fail(*this, "reshape", "the dims to reshape are not contiguous");
    dims[nj - 1].stride = old[oj - 1].stride;
    for (size_t k = nj - 1; k > ni; --k) dims[k - 1].stride = dims[k].stride * shape[k];
    oi = oj;
    ni = nj;
  }
  if (on_chip()) dims[0] = dims_[0];
  View v = *this;
  v.dims_ = std::move(dims);
  return v;
}

View View::broadcast(int axis, int64_t n) const {
  if (axis < (on_chip() ? 1 : 0) || axis > rank() || n < 1)
    fail(*this, "broadcast",
         fmt::format("axis {} (n = {}): a tile's partition dim cannot be "
                     "broadcast, and the axis must be within the rank",
                     axis, n));
  View v = *this;
  v.dims_.insert(v.dims_.begin() + axis, ViewDim{n, 0});
  return v;
}

isa::AccessPattern View::access(const std::vector<int>& groups,
                                std::vector<int>* group_dims) const {
  isa::AccessPattern ap;
  ap.space = space();
  ap.dtype = dtype();
  ap.offset = region_->base + offset_ * dtype().storage_bytes;
  size_t first = 1;
  if (on_chip()) {
    ap.start_partition = static_cast<int32_t>(start_partition_);
    ap.num_partitions = static_cast<int32_t>(partitions());
  } else if (dims_.size() >= 2) {
    ap.num_partitions = static_cast<int32_t>(dims_[0].size);
    ap.partition_stride = dims_[0].stride;
  } else {
    ap.num_partitions = 1;
    first = 0;
  }
  std::vector<ViewDim> free(dims_.begin() + static_cast<std::ptrdiff_t>(first), dims_.end());
  std::vector<int> bounds{0};
  for (int g : groups) bounds.push_back(std::clamp(g, 0, static_cast<int>(free.size())));
  bounds.push_back(static_cast<int>(free.size()));
  std::vector<ViewDim> out;
  if (group_dims) group_dims->clear();
  for (size_t g = 0; g + 1 < bounds.size(); ++g) {
    std::vector<ViewDim> part(free.begin() + bounds[g], free.begin() + bounds[g + 1]);
    std::vector<ViewDim> m = merge_dims(part);
    if (m.empty() && (!groups.empty() || (g + 2 == bounds.size() && out.empty())))
      m.push_back({1, 1});
    out.insert(out.end(), m.begin(), m.end());
    if (group_dims) group_dims->push_back(static_cast<int>(m.size()));
  }
  if (out.size() > static_cast<size_t>(isa::kMaxFreeDims))
    fail(*this, "access pattern",
         fmt::format("{} free dims after merging contiguous ones; the hardware has {}", out.size(),
                     isa::kMaxFreeDims));
  for (size_t i = 0; i < out.size(); ++i) ap.dims[i] = {out[i].stride, out[i].size};
  ap.ndim = static_cast<int32_t>(out.size());
  if (is_dynamic()) {
    ap.dyn_reg = static_cast<int8_t>(dyn_.reg);
    ap.dyn_step = dyn_.step * dtype().storage_bytes;
    ap.dyn_max = dyn_.max;
  }
  return ap;
}

namespace {

// Elements [lo, hi] a view reaches from its offset, and the elements of its region (per
// partition on chip).
struct Extent {
  int64_t lo = 0, hi = 0, size = 1;
};

Extent extent_of(const View& v) {
  Extent x;
  const size_t first = v.on_chip() ? 1 : 0;
  for (size_t i = first; i < v.dims().size(); ++i)
    (v.dims()[i].stride < 0 ? x.lo : x.hi) += v.dims()[i].stride * (v.dims()[i].size - 1);
  for (size_t i = first; i < v.region().shape.size(); ++i) x.size *= v.region().shape[i];
  x.lo += v.offset();
  x.hi += v.offset();
  return x;
}

}  // namespace

int32_t View::dynamic_limit(int64_t step) const {
  const Extent x = extent_of(*this);
  if (x.lo < 0 || x.hi >= x.size) return -1;
  if (step == 0) return std::numeric_limits<int32_t>::max();
  const int64_t room = step > 0 ? (x.size - 1 - x.hi) / step : x.lo / -step;
  return static_cast<int32_t>(std::min<int64_t>(room, std::numeric_limits<int32_t>::max()));
}

View View::dynamic(int32_t reg, int64_t step, int32_t max) const {
  if (is_dynamic()) fail(*this, "dynamic offset", "the view already has one");
  if (reg < 0 || reg >= isa::kScalarRegisters)
    fail(*this, "dynamic offset",
         fmt::format("register r{}; engines have r0..r{}", reg, isa::kScalarRegisters - 1));
  if (max < 0) fail(*this, "dynamic offset", fmt::format("largest register value {}", max));
  // Every place the register may move it to stays inside the tile or tensor (the hardware
  // checks memory bounds only; a view must not reach its neighbours).
  if (max > dynamic_limit(step)) {
    Extent x = extent_of(*this);
    (step < 0 ? x.lo : x.hi) += step * max;
    fail(*this, "dynamic offset",
         fmt::format("r{} x {} elements for r in 0..{} reaches elements [{}, {}] of {}", reg, step,
                     max, x.lo, x.hi, x.size));
  }
  View v = *this;
  v.dyn_ = {reg, step, max};
  return v;
}

std::string View::describe() const {
  if (!region_) return "an empty view";
  std::string where(isa::space_name(space()));
  if (on_chip()) where += fmt::format("[{}:{}]", start_partition_, start_partition_ + partitions());
  return fmt::format("'{}' {} [{}] {}", name(), where, fmt::join(shape(), ", "), dtype().name());
}

}  // namespace trnsim::kernel
