// The shape rule of the indirect DMAs, dma_gather and dma_scatter (ShapeRule::kDmaIndirect).
// Their HBM operand is not the bytes one transfer moves but the table it indexes: every row of
// one declared tensor ([rows, F], from row 0, the tensor's own row stride), so that a row
// number in `offsets` is the tensor's row number and one outside [0, rows) is outside the
// tensor (a fault when the transfer runs: core/exec/exec_dma_indirect.cc). The SBUF operand is
// [P, F] and `offsets` [P, 1]: partition p moves row offsets[p].
#include "isa/validate_context.h"

namespace trnsim::isa::detail {

namespace {

// Operand slots of the op table entries (dst, src, offsets).
constexpr int kOffsetsSlot = 2;

bool is_mx_only(const num::Format& f) {
  return f.dtype == num::Dtype::kFp4E2M1 || f.dtype == num::Dtype::kE8M0;
}

// The HBM side spans every row of the tensor it starts in.
void check_table(Context& c, int slot) {
  const AccessPattern& hbm = c.operand(slot);
  const HbmTensor* t = c.prog.tensor_at(hbm.offset);
  if (t == nullptr) return;  // check_hbm reports an operand outside every tensor
  const int64_t row_bytes = t->row_elements() * t->dtype.storage_bytes;
  const int64_t rows = t->shape.empty() ? 1 : t->shape[0];
  const int64_t stride_bytes = hbm.partition_stride * hbm.dtype.storage_bytes;
  const int64_t into = hbm.offset - t->address;
  if (hbm.num_partitions != rows || (rows > 1 && stride_bytes != row_bytes) || into >= row_bytes)
    c.report(RuleKind::kShape,
             "{} is the table an indirect DMA indexes: every row of tensor '{}' ({} rows of {} "
             "bytes) from row 0; it has {} rows {} bytes apart from byte {} of the tensor",
             operand_label(*c.inst, slot), t->name, rows, row_bytes, hbm.num_partitions,
             stride_bytes, into);
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
  // A scatter that adds (NKI atomic_rmw): the DMA engine's read-add-write, in bf16 or fp32 on
  // both sides as dma_copy's accumulate.
  const auto d = hbm.dtype.dtype;
  if (c.inst->p.dma_accumulate &&
      (hbm.dtype != sbuf.dtype || (d != num::Dtype::kBf16 && d != num::Dtype::kFp32)))
    c.report(RuleKind::kDtype, "accumulate takes bf16 or fp32 on both sides; src is {}, dst {}",
             c.operand(1).dtype.name(), c.operand(0).dtype.name());
  // Casts go through fp32, as dma_copy's, which MX element and scale formats do not (DMA-OV).
  if (hbm.dtype != sbuf.dtype && (is_mx_only(hbm.dtype) || is_mx_only(sbuf.dtype)))
    c.report(RuleKind::kDtype, "DMA cannot cast {} to {}", c.operand(1).dtype.name(),
             c.operand(0).dtype.name());
}

}  // namespace trnsim::isa::detail
