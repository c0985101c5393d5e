// LayerNorm over the free dim (as the NKI LayerNorm tutorial's bn_stats version), 128 rows at a
// time: bn_stats on chunks of at most 512 elements, bn_aggr to the row's mean and (population)
// variance, rstd = (var + eps)^-0.5 on VectorE, y = (x - mean) * rstd in one tensor_scalar
// with two [P, 1] columns, then * gamma + beta, which were loaded once, broadcast to every
// partition by the DMA (a stride-0 row dim).
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

isa::Program layernorm(const arch::ChipSpec& chip, int64_t rows, int64_t cols, double eps) {
  using isa::AluOp;
  using kernel::all;
  using kernel::Tile;
  constexpr int64_t kBnChunk = 512;  // bn_stats takes at most 512 elements per partition
  const int64_t parts = chip.core.sbuf.partitions;
  require_rows("layernorm", rows, cols);
  kernel::KernelBuilder kb(chip);
  const kernel::Tensor x = kb.input("x", num::fp32(), {rows, cols});
  const kernel::Tensor gamma = kb.input("gamma", num::fp32(), {cols});
  const kernel::Tensor beta = kb.input("beta", num::fp32(), {cols});
  const kernel::Tensor y = kb.output("y", num::fp32(), {rows, cols});

  const Tile gamma_t = kb.sbuf("gamma", num::fp32(), {parts, cols});
  const Tile beta_t = kb.sbuf("beta", num::fp32(), {parts, cols});
  kb.dma_copy(gamma_t, gamma.broadcast(0, parts));
  kb.dma_copy(beta_t, beta.broadcast(0, parts));
  const int64_t chunks = (cols + kBnChunk - 1) / kBnChunk;
  const auto x_bufs = kb.sbuf_buffers("x_tile", num::fp32(), {parts, cols}, 2);
  const auto y_bufs = kb.sbuf_buffers("y_tile", num::fp32(), {parts, cols}, 2);
  const auto stats_bufs = kb.sbuf_buffers("bn_stats", num::fp32(), {parts, chunks, 6}, 2);
  const auto mv_bufs = kb.sbuf_buffers("mean_var", num::fp32(), {parts, 3}, 2);
  for_each_row_tile(rows, parts, [&](int64_t r0, int64_t p, size_t buf) {
    const Tile xt = x_bufs[buf]({0, p}), yt = y_bufs[buf]({0, p});
    const Tile stats = stats_bufs[buf]({0, p});
    const Tile mv = mv_bufs[buf]({0, p});  // mean, variance, rstd
    kb.dma_copy(xt, x({r0, r0 + p}));
    for (int64_t c = 0; c < chunks; ++c)
      kb.bn_stats(stats(all, c), xt(all, {c * kBnChunk, std::min(cols, (c + 1) * kBnChunk)}));
    kb.bn_aggr(mv(all, {0, 2}), stats);
    kb.tensor_scalar(mv(all, {2, 3}), mv(all, {1, 2}), {AluOp::kAdd, eps}, {AluOp::kPow, -0.5f});
    kb.tensor_scalar(yt, xt, {AluOp::kSubtract, mv(all, {0, 1})}, {AluOp::kMult, mv(all, {2, 3})});
    kb.tensor_tensor(yt, yt, gamma_t({0, p}), AluOp::kMult);
    kb.tensor_tensor(yt, yt, beta_t({0, p}), AluOp::kAdd);
    kb.dma_copy(y({r0, r0 + p}), yt);
  });
  return kb.build();
}

}  // namespace trnsim::examples
