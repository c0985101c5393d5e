// The embedding kernel (ops.h EmbeddingSpec): 128 token ids at a time are loaded as a [P, 1]
// column and the table rows gathered by indirect DMA (software DGE on GpSimd, as NKI's
// indirect loads); learned positions are gathered the same way and added on VectorE.
#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/ops.h"
#include "ops/rows.h"

namespace trnsim::ops {

void emit_embedding(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const EmbeddingSpec& s) {
  require_range("embedding", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("embedding", "vocab", s.vocab, 1, int64_t{1} << 24);
  require_range("embedding", "hidden", s.hidden, 1, 65536);
  require_range("embedding", "positions", s.positions, 0, int64_t{1} << 24);
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, H = s.hidden;
  const kernel::Tensor ids = kb.input("ids", num::int_format(num::Dtype::kInt32), {T});
  const kernel::Tensor table = kb.input("table", s.dtype, {s.vocab, H});
  kernel::Tensor pos_ids, pos_table;
  if (s.positions > 0) {
    pos_ids = kb.input("pos_ids", num::int_format(num::Dtype::kInt32), {T});
    pos_table = kb.input("pos_table", s.dtype, {s.positions, H});
  }
  const kernel::Tensor y = kb.output("y", s.dtype, {T, H});
  const auto id_bufs = kb.sbuf_buffers("ids", num::int_format(num::Dtype::kInt32), {parts, 2}, 2);
  const auto row_bufs = kb.sbuf_buffers("rows", s.dtype, {parts, H}, 2);
  const auto pos_bufs = s.positions > 0 ? kb.sbuf_buffers("pos_rows", s.dtype, {parts, H}, 2)
                                        : std::vector<kernel::Tile>{};
  const isa::Engine gp = isa::Engine::kGpSimd;
  for (int64_t r0 = 0, i = 0; r0 < T; r0 += parts, ++i) {
    const int64_t p = std::min(parts, T - r0);
    const size_t b = static_cast<size_t>(i % 2);
    const kernel::Tile idt = id_bufs[b]({0, p});
    const kernel::Tile rows = row_bufs[b]({0, p});
    kb.dma_copy(idt(kernel::all, {0, 1}), ids({r0, r0 + p}).reshape({p, 1}));
    kb.dma_gather(rows, table, idt(kernel::all, {0, 1}), {.trigger = gp});
    if (s.positions > 0) {
      kb.dma_copy(idt(kernel::all, {1, 2}), pos_ids({r0, r0 + p}).reshape({p, 1}));
      const kernel::Tile pr = pos_bufs[b]({0, p});
      kb.dma_gather(pr, pos_table, idt(kernel::all, {1, 2}), {.trigger = gp});
      kb.tensor_tensor(rows, rows, pr, isa::AluOp::kAdd);
    }
    kb.dma_copy(y({r0, r0 + p}), rows);
  }
}

isa::Program embedding(const arch::ChipSpec& chip, const EmbeddingSpec& s) {
  kernel::KernelBuilder kb(chip);
  emit_embedding(kb, chip, s);
  return kb.build();
}

}  // namespace trnsim::ops
