// Shape and parameter rules of GpSimd's index ops (NKI nc_n_gather, local_gather,
// sequence_bounds, nonzero_with_count: the API reference's constraints). Each GpSimd core
// serves 16 contiguous partitions (HARDWARE.md s2.5: 8 cores x 16 lanes), which is why
// local_gather and nonzero_with_count work in 16-partition groups.
#include "isa/names.h"
#include "isa/validate_context.h"

namespace trnsim::isa::detail {

namespace {

constexpr int64_t kCorePartitions = 16;
constexpr int64_t kLocalGatherMaxIndices = 4096;  // per core (NKI local_gather)

void same_partitions(Context& c, int a, int b) {
  if (c.operand(a).num_partitions != c.operand(b).num_partitions)
    c.report(RuleKind::kShape, "{} has {} partitions but {} has {}", operand_label(*c.inst, b),
             c.operand(b).num_partitions, operand_label(*c.inst, a), c.operand(a).num_partitions);
}

void same_dtype(Context& c, int a, int b) {
  if (c.operand(a).dtype != c.operand(b).dtype)
    c.report(RuleKind::kDtype, "{} moves elements unchanged: {} is {}, {} is {}",
             mnemonic(c.inst->op), operand_label(*c.inst, a), c.operand(a).dtype.name(),
             operand_label(*c.inst, b), c.operand(b).dtype.name());
}

void n_gather_rules(Context& c) {  // dst, data, indices
  same_dtype(c, 0, 1);
  same_partitions(c, 0, 1);
  same_partitions(c, 0, 2);
  if (c.operand(0).free_elements() != c.operand(2).free_elements())
    c.report(RuleKind::kShape, "dst has {} elements per partition, indices {}: one each",
             c.operand(0).free_elements(), c.operand(2).free_elements());
}

void local_gather_rules(Context& c) {  // dst, src, index
  const Params& p = c.inst->p;
  same_dtype(c, 0, 1);
  same_partitions(c, 1, 0);
  same_partitions(c, 1, 2);
  for (int i : {0, 1, 2}) {
    const AccessPattern& a = c.operand(i);
    if (a.start_partition % kCorePartitions != 0 || a.num_partitions % kCorePartitions != 0)
      c.report(RuleKind::kShape,
               "{} covers partitions {}..{}: local_gather works on whole 16-partition GpSimd "
               "cores",
               operand_label(*c.inst, i), a.start_partition,
               a.start_partition + a.num_partitions - 1);
  }
  const int e = p.gather_elems;
  if (e != 1 && e != 2 && e != 4 && e != 8 && e != 16 && e != 32)
    c.report(RuleKind::kMalformed, "elems={}: 1, 2, 4, 8, 16 or 32 elements per index", e);
  const int64_t slice = c.operand(2).free_elements() * kCorePartitions;
  const int64_t used = p.gather_indices == 0 ? slice : p.gather_indices;
  if (used < 1 || used > slice || used > kLocalGatherMaxIndices)
    c.report(RuleKind::kMalformed,
             "indices={}: a core has {} indices in its slice, and uses at most {}", used, slice,
             kLocalGatherMaxIndices);
  else if (c.operand(0).free_elements() != used * e)
    c.report(RuleKind::kShape, "dst has {} elements per partition; {} indices x {} elements",
             c.operand(0).free_elements(), used, e);
}

void sequence_bounds_rules(Context& c) {  // dst, segment_ids
  for (int i : {0, 1})
    if (c.operand(i).num_partitions != 1)
      c.report(RuleKind::kShape, "{} has {} partitions; sequence_bounds works on one",
               operand_label(*c.inst, i), c.operand(i).num_partitions);
  if (c.operand(0).free_elements() != 2 * c.operand(1).free_elements())
    c.report(RuleKind::kShape, "dst has {} elements; a start and an end for each of {} ids need {}",
             c.operand(0).free_elements(), c.operand(1).free_elements(),
             2 * c.operand(1).free_elements());
}

void nonzero_rules(Context& c) {  // dst, src
  same_partitions(c, 0, 1);
  if (c.operand(0).free_elements() != c.operand(1).free_elements() + 1)
    c.report(RuleKind::kShape,
             "dst has {} elements per partition; src's {} positions and the count need {}",
             c.operand(0).free_elements(), c.operand(1).free_elements(),
             c.operand(1).free_elements() + 1);
}

}  // namespace

void check_gather(Context& c) {
  switch (op_info(c.inst->op).shape) {
    case ShapeRule::kNGather:
      return n_gather_rules(c);
    case ShapeRule::kLocalGather:
      return local_gather_rules(c);
    case ShapeRule::kSequenceBounds:
      return sequence_bounds_rules(c);
    case ShapeRule::kNonzeroWithCount:
      return nonzero_rules(c);
    default:
      return;
  }
}

}  // namespace trnsim::isa::detail
