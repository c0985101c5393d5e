// The embedding backward kernel (train_ops.h EmbeddingGradSpec).
//   Zero: one fp32 SBUF tile of zeros is stored over dtable in [128, <= 4096]-element blocks
//   (2 MiB contiguous runs of HBM).
//   Per 128-token tile: the ids as an int32 [p, 1] column (the gather / scatter offsets) and
//   as a row broadcast to every partition ([p, p], one stride-0 DMA: no TensorE transpose
//   needed); the equality matrix E[q, t] = (ids[q] == ids[t]) in the dtype (one ScalarE
//   tensor_scalar against the column; ids < 2^24 compare exactly as fp32). Then per block of
//   up to 8192 hidden columns: dy loaded; sum = E @ dy on TensorE per 512 columns (E is
//   symmetric, so it serves as the stationary E^T), which gives every token the total over the
//   tile's tokens with its id; the current dtable rows at ids gathered (fp32), the PSUM sums
//   added on VectorE, the rows scattered back. Duplicate ids write the same total, so the
//   scatter's "last partition wins" is harmless; across tiles the builder orders each gather
//   after the previous scatter (an indirect DMA counts as reading / writing the whole table),
//   and the first gather after the zeroing. So the kernel takes the zeroing's time plus a
//   chain of gather, add, scatter per tile, TensorE and the loads running ahead of it.
// An id outside [0, vocab) is the gather's index_range fault, as in the forward.
#include <algorithm>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

namespace {
constexpr int64_t kPsumChunk = 512;   // fp32 columns of one PSUM bank
constexpr int64_t kZeroBlock = 4096;  // fp32 elements per partition of the zero tile (16 KiB)
constexpr int64_t kMaxBlock = 8192;   // hidden columns gathered, summed and scattered at once
}  // namespace

isa::Program embedding_backward(const arch::ChipSpec& chip, const EmbeddingGradSpec& s) {
  require_range("embedding_backward", "tokens", s.tokens, 1, int64_t{1} << 24);
  // ids are compared as fp32, exact below 2^24.
  require_range("embedding_backward", "vocab", s.vocab, 1, int64_t{1} << 24);
  require_range("embedding_backward", "hidden", s.hidden, 1, 65536);
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, V = s.vocab, H = s.hidden;
  const num::Format i32 = num::int_format(num::Dtype::kInt32);
  using kernel::all;

  kernel::KernelBuilder kb(chip);
  const kernel::Tensor ids = kb.input("ids", i32, {T});
  const kernel::Tensor dy = kb.input("dy", s.dtype, {T, H});
  const kernel::Tensor dtable = kb.output("dtable", num::fp32(), {V, H});

  // Zero dtable: whole [parts, z] blocks, then the remaining rows of z, then the last elements.
  {
    const int64_t n = V * H;
    const int64_t z = std::min(kZeroBlock, ceil_div(n, parts));
    const kernel::Tile zeros = kb.sbuf("zeros", num::fp32(), {parts, z});
    kb.memset(zeros, 0.0, isa::Engine::kGpSimd);
    const kernel::Tensor flat = dtable.reshape({n});
    int64_t e = 0;
    for (; e + parts * z <= n; e += parts * z)
      kb.dma_copy(flat({e, e + parts * z}).reshape({parts, z}), zeros);
    if (const int64_t r = (n - e) / z; r > 0) {
      kb.dma_copy(flat({e, e + r * z}).reshape({r, z}), zeros({0, r}));
      e += r * z;
    }
    if (e < n) kb.dma_copy(flat({e, n}).reshape({1, n - e}), zeros({0, 1}, {0, n - e}));
  }

  // Hidden columns per block: whole rows up to 8192 (fp32 rows and dy, double-buffered, take
  // 12 bytes per column of a partition), wider rows in equal blocks, each gathered, summed and
  // scattered on its own (an indirect DMA may move any columns of the table's rows).
  const int64_t blocks = ceil_div(H, kMaxBlock), hb = ceil_div(H, blocks);
  const auto col_bufs = kb.sbuf_buffers("ids", i32, {parts, 1}, 2);
  const auto row_bufs = kb.sbuf_buffers("ids_row", i32, {parts, parts}, 2);
  const auto eq_bufs = kb.sbuf_buffers("eq", s.dtype, {parts, parts}, 2);
  const auto dy_bufs = kb.sbuf_buffers("dy", s.dtype, {parts, hb}, 2);
  const auto acc_bufs = kb.sbuf_buffers("rows", num::fp32(), {parts, hb}, 2);
  // Every PSUM bank: TensorE can make a whole block's sums (up to 4096 columns) ahead while
  // VectorE waits for the block's gather, which waits for the previous scatter.
  const int banks = chip.core.psum.banks;
  const auto ps_bufs = kb.psum_buffers("sum", num::fp32(), {parts, kPsumChunk}, banks);
  const isa::Engine gp = isa::Engine::kGpSimd;
  int64_t k = 0, c = 0;  // blocks and PSUM chunks so far (buffer rotation)
  for (int64_t r0 = 0, i = 0; r0 < T; r0 += parts, ++i) {
    const int64_t p = std::min(parts, T - r0);
    const auto b = static_cast<size_t>(i % 2);
    const kernel::Tile idc = col_bufs[b]({0, p}), idr = row_bufs[b]({0, p}, {0, p});
    const kernel::Tile eq = eq_bufs[b]({0, p}, {0, p});
    kb.dma_copy(idc, ids({r0, r0 + p}).reshape({p, 1}));
    kb.dma_copy(idr, ids({r0, r0 + p}).broadcast(0, p));
    kb.tensor_scalar(eq, idr, {isa::AluOp::kIsEqual, idc}, {}, isa::Engine::kScalar);
    for (int64_t h0 = 0; h0 < H; h0 += hb, ++k) {
      const int64_t h1 = std::min(H, h0 + hb);
      const kernel::Tile dyt = dy_bufs[static_cast<size_t>(k % 2)]({0, p}, {0, h1 - h0});
      const kernel::Tile rows = acc_bufs[static_cast<size_t>(k % 2)]({0, p}, {0, h1 - h0});
      const kernel::Tensor table = dtable(all, {h0, h1});
      kb.dma_copy(dyt, dy({r0, r0 + p}, {h0, h1}));
      kb.dma_gather(rows, table, idc, {.trigger = gp});
      for (int64_t c0 = 0; c0 < h1 - h0; c0 += kPsumChunk, ++c) {
        const int64_t c1 = std::min(h1 - h0, c0 + kPsumChunk);
        const kernel::Tile ps = ps_bufs[static_cast<size_t>(c % banks)]({0, p}, {0, c1 - c0});
        kb.matmul(ps, eq, dyt(all, {c0, c1}));
        kb.tensor_tensor(rows(all, {c0, c1}), rows(all, {c0, c1}), ps, isa::AluOp::kAdd);
      }
      kb.dma_scatter(table, rows, idc, {.trigger = gp});
    }
  }
  return kb.build();
}

}  // namespace trnsim::ops
