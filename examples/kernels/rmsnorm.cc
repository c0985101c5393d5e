// RMSNorm over the free dim, 128 rows at a time, on three engines:
//   ss   = sum(x^2)                      ScalarE activation (square) with the add-reduction
//   rstd = rsqrt(ss / cols + eps)        ScalarE activation: scale and bias are immediates
//   y    = (x * rstd) * gamma            VectorE scalar_tensor_tensor, gamma broadcast by DMA
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

isa::Program rmsnorm(const arch::ChipSpec& chip, int64_t rows, int64_t cols, double eps) {
  using isa::AluOp;
  using kernel::all;
  using kernel::Tile;
  const int64_t parts = chip.core.sbuf.partitions;
  require_rows("rmsnorm", rows, cols);
  kernel::KernelBuilder kb(chip);
  const kernel::Tensor x = kb.input("x", num::fp32(), {rows, cols});
  const kernel::Tensor gamma = kb.input("gamma", num::fp32(), {cols});
  const kernel::Tensor y = kb.output("y", num::fp32(), {rows, cols});

  const Tile gamma_t = kb.sbuf("gamma", num::fp32(), {parts, cols});
  kb.dma_copy(gamma_t, gamma.broadcast(0, parts));
  const auto x_bufs = kb.sbuf_buffers("x_tile", num::fp32(), {parts, cols}, 2);
  const auto sq_bufs = kb.sbuf_buffers("square", num::fp32(), {parts, cols}, 2);
  const auto stat_bufs = kb.sbuf_buffers("row_stats", num::fp32(), {parts, 2}, 2);
  for_each_row_tile(rows, parts, [&](int64_t r0, int64_t p, size_t buf) {
    const Tile xt = x_bufs[buf]({0, p}), sq = sq_bufs[buf]({0, p});
    const Tile st = stat_bufs[buf]({0, p});
    const Tile ss = st(all, {0, 1}), rstd = st(all, {1, 2});
    kb.dma_copy(xt, x({r0, r0 + p}));
    kb.activation_reduce(sq, ss, xt, isa::ActFunc::kSquare);
    kb.activation(rstd, ss, isa::ActFunc::kRsqrt, 1.0 / static_cast<double>(cols), eps);
    // The squares are no longer needed: y goes into their tile.
    kb.scalar_tensor_tensor(sq, xt, {AluOp::kMult, rstd}, AluOp::kMult, gamma_t({0, p}));
    kb.dma_copy(y({r0, r0 + p}), sq);
  });
  return kb.build();
}

}  // namespace trnsim::examples
