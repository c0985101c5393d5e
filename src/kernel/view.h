// A typed window on kernel memory: an HBM tensor or an on-chip tile (SBUF, PSUM). A view is a
// list of dims, outermost first, each a size and a stride in elements. On chip, dim 0 is the
// partition dim (a run of contiguous partitions: the hardware has no partition striding,
// HARDWARE.md s3) and the rest are free dims within each partition; in HBM, dim 0 is the row
// dim of the access pattern and may have any stride. Views are cheap values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isa/access_pattern.h"
#include "kernel/index.h"
#include "numerics/format.h"

namespace trnsim::kernel {

// What a view looks into. Owned through shared_ptr by every view of it. On-chip regions have
// no place while the kernel is traced: builder.h places them at build().
struct Region {
  isa::Space space = isa::Space::kSbuf;
  num::Format dtype = num::fp32();
  std::string name;
  // bytes: HBM device address; on chip, the tile's virtual base while the kernel is traced
  // (unique per tile, >= kVirtualBase), which build() replaces by where it placed the tile
  int64_t base = 0;
  int32_t tile = -1;           // on chip: the builder's tile number
  int32_t tensor = -1;         // HBM: index into Program::tensors
  int64_t row_elements = 1;    // HBM: elements per row of the tensor's outermost dim
  std::vector<int64_t> shape;  // as declared
  uint64_t builder = 0;        // the KernelBuilder that made it (its id)
};

struct ViewDim {
  int64_t size = 1;
  int64_t stride = 1;  // elements (on-chip dim 0: unused, partitions are contiguous)
};

// A register-relative start (isa/access_pattern.h): scalar register `reg` of the engine that runs
// the instruction moves the view by reg x step elements, reg in 0..max.
struct DynamicOffset {
  int32_t reg = -1;  // -1: a static view
  int64_t step = 0;  // elements
  int32_t max = 0;
};

class View {
 public:
  View() = default;
  View(std::shared_ptr<const Region> region, int64_t start_partition, int64_t offset,
       std::vector<ViewDim> dims);

  bool valid() const { return region_ != nullptr; }
  isa::Space space() const { return region_->space; }
  bool on_chip() const { return space() != isa::Space::kHbm; }
  const num::Format& dtype() const { return region_->dtype; }
  const std::string& name() const { return region_->name; }
  const Region& region() const { return *region_; }

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t size(int d) const { return dims_.at(static_cast<size_t>(d)).size; }
  std::vector<int64_t> shape() const;
  const std::vector<ViewDim>& dims() const { return dims_; }
  // Partitions on chip; rows of the access pattern in HBM (1 for a rank-1 view).
  int64_t partitions() const;
  int64_t free_elements() const;  // per partition / row
  int64_t elements() const { return partitions() * free_elements(); }
  int64_t start_partition() const { return start_partition_; }
  int64_t offset() const { return offset_; }  // elements from the region's base
  bool has_zero_stride() const;

  // Indexing (index.h). Throws InputError naming the view for an out-of-range index, a step
  // on the partition dim, or too many indices.
  View operator()(Idx a) const;
  View operator()(Idx a, Idx b) const;
  View operator()(Idx a, Idx b, Idx c) const;
  View operator()(Idx a, Idx b, Idx c, Idx d) const;
  View operator()(Idx a, Idx b, Idx c, Idx d, Idx e) const;
  View index(const std::vector<Idx>& idx) const;

  // The same elements with another shape (row-major). On chip the partition dim must stay;
  // the dims that change must be contiguous. Throws InputError otherwise.
  View reshape(const std::vector<int64_t>& shape) const;
  // A new dim of `n` repeats (stride 0) before dim `axis`: a [cols] HBM vector read as
  // [128, cols], or a [P, 1] column read as [P, F]. Not on the partition dim of a tile.
  View broadcast(int axis, int64_t n) const;

  // NKI's tensor.ap(): the region's elements walked by an explicit pattern, `offset` elements
  // from the region's start, dims outermost first as [size, stride]. On chip, dim 0 is the
  // partition dim and its stride must be the region's elements per partition (partitions are
  // contiguous). Throws InputError for a pattern that leaves the region (view_pattern.cc).
  View pattern(int64_t offset, const std::vector<ViewDim>& dims) const;
  // The same bytes read as `dtype` (NKI's tensor.view(dtype)): the innermost dim, which must be
  // contiguous, and the strides scale by the ratio of element sizes.
  View bitcast(num::Format dtype) const;
  // The same view moved by r x step elements when the instruction runs, r read from scalar
  // register `reg` (0..max, else the instruction faults). Views made from it keep the dynamic
  // part. Throws InputError for a view already dynamic, or a register out of range.
  View dynamic(int32_t reg, int64_t step, int32_t max) const;
  // The largest register value that keeps the view moved by r x step inside its tile or
  // tensor (-1: none does; INT32_MAX when step is 0).
  int32_t dynamic_limit(int64_t step) const;
  const DynamicOffset& dynamic_offset() const { return dyn_; }
  bool is_dynamic() const { return dyn_.reg >= 0; }

  // The hardware operand. Free dims are merged where contiguous and size-1 dims dropped,
  // but never across a boundary in `groups` (free-dim indices, counted from dim 1, where a
  // new group starts): reductions and double-row matmuls need their dims kept apart.
  // `group_dims`, if given, receives the free dims each group became.
  isa::AccessPattern access(const std::vector<int>& groups = {},
                            std::vector<int>* group_dims = nullptr) const;

  std::string describe() const;  // "'name' sbuf [128, 512] bf16"

 private:
  std::shared_ptr<const Region> region_;
  int64_t start_partition_ = 0;
  int64_t offset_ = 0;
  std::vector<ViewDim> dims_;
  DynamicOffset dyn_;
};

// Aliases that say what a value is meant to be; both are views.
using Tile = View;
using Tensor = View;

}  // namespace trnsim::kernel
