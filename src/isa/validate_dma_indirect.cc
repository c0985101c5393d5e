// The shape rule of the indirect DMAs, dma_gather and dma_scatter (ShapeRule::kDmaIndirect).
// Their HBM operand is not the bytes one transfer moves but the table it indexes: rows of one
// declared tensor, evenly spaced (the DGE's address is the table's start plus the row number
// times its row step, as NKI's .ap(pattern, offset, vector_offset=) writes it), so that a row
// number in `offsets` is a row of the table and one outside [0, rows) is outside it (a fault
// when the transfer runs: core/exec/exec_dma_indirect.cc). t[idx, ...] indexes every row of
// t; s[k, idx] the rows of t[k]. The SBUF operand is [P, F] and `offsets` [P, 1]: partition p
// moves row offsets[p].
#include "isa/dma_add_dtypes.h"
#include "isa/validate_context.h"

namespace trnsim::isa::detail {

namespace {

// Operand slots of the op table entries (dst, src, offsets).
constexpr int kOffsetsSlot = 2;

bool is_mx_only(const num::Format& f) {
  return f.dtype == num::Dtype::kFp4E2M1 || f.dtype == num::Dtype::kE8M0;
}

// The table's rows are distinct and in order: a positive row step. (That they lie inside one
// declared tensor is check_hbm's rule, as for any HBM operand.)
void check_table(Context& c, int slot) {
  const AccessPattern& hbm = c.operand(slot);
  if (hbm.num_partitions > 1 && hbm.partition_stride <= 0)
    c.report(RuleKind::kShape,
             "{} is the table an indirect DMA indexes: its {} rows need a positive row step, "
             "got {} elements",
             operand_label(*c.inst, slot), hbm.num_partitions, hbm.partition_stride);
}

}  // namespace

void check_dma_indirect(Context& c) {
  check_dma_queue(c);
  const bool gather = c.inst->op == Opcode::kDmaGather;
  const int hbm_slot = gather ? 1 : 0, sbuf_slot = gather ? 0 : 1;
  const AccessPattern &hbm = c.operand(hbm_slot), &sbuf = c.operand(sbuf_slot);
  const AccessPattern& offsets = c.operand(kOffsetsSlot);
  if (offsets.num_partitions != sbuf.num_partitions || offsets.free_elements() != 1)
    c.report(RuleKind::kShape, "{} is {}; it holds one row number per partition of {}: [P={}, F=1]",
             operand_label(*c.inst, kOffsetsSlot), shape_text(offsets),
             operand_label(*c.inst, sbuf_slot), sbuf.num_partitions);
  if (hbm.free_elements() != sbuf.free_elements())
    c.report(RuleKind::kShape,
             "{} has {} elements per row but {} has {} per partition (a partition moves one row)",
             operand_label(*c.inst, hbm_slot), hbm.free_elements(),
             operand_label(*c.inst, sbuf_slot), sbuf.free_elements());
  if (hbm.space == Space::kHbm) check_table(c, hbm_slot);
  // A scatter that adds (NKI atomic_rmw): the DMA engine's read-add-write (dma_add_dtypes.h).
  if (c.inst->p.dma_accumulate && (hbm.dtype != sbuf.dtype || !scatter_add_dtype(hbm.dtype.dtype)))
    c.report(RuleKind::kDtype,
             "accumulate takes bf16, fp32, int32 or uint32, the same on both sides; src is {}, "
             "dst {}",
             c.operand(1).dtype.name(), c.operand(0).dtype.name());
  // Casts go through fp32, as dma_copy's, which MX element and scale formats do not (DMA-OV).
  if (hbm.dtype != sbuf.dtype && (is_mx_only(hbm.dtype) || is_mx_only(sbuf.dtype)))
    c.report(RuleKind::kDtype, "DMA cannot cast {} to {}", c.operand(1).dtype.name(),
             c.operand(0).dtype.name());
}

}  // namespace trnsim::isa::detail
