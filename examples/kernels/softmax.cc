// Row-wise softmax over the free dim, 128 rows at a time:
//   max  = reduce_max(x)                 VectorE tensor_reduce
//   e    = exp(x - max), sum = sum(e)    ScalarE activation with the add-reduction (bias = -max)
//   y    = e * (1 / sum)                 VectorE reciprocal, tensor_scalar with a [P, 1] column
// Two buffers per tile so that the load of the next rows overlaps the current ones.
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

isa::Program softmax(const arch::ChipSpec& chip, int64_t rows, int64_t cols) {
  using isa::AluOp;
  using kernel::all;
  using kernel::Tile;
  const int64_t parts = chip.core.sbuf.partitions;
  require_rows("softmax", rows, cols);
  kernel::KernelBuilder kb(chip);
  const kernel::Tensor x = kb.input("x", num::fp32(), {rows, cols});
  const kernel::Tensor y = kb.output("y", num::fp32(), {rows, cols});

  const auto x_bufs = kb.sbuf_buffers("x_tile", num::fp32(), {parts, cols}, 2);
  const auto e_bufs = kb.sbuf_buffers("exp_tile", num::fp32(), {parts, cols}, 2);
  const auto stat_bufs = kb.sbuf_buffers("row_stats", num::fp32(), {parts, 4}, 2);
  for_each_row_tile(rows, parts, [&](int64_t r0, int64_t p, size_t buf) {
    const Tile xt = x_bufs[buf]({0, p}), et = e_bufs[buf]({0, p});
    // Columns of the stats tile: max, -max, sum, 1/sum.
    const Tile st = stat_bufs[buf]({0, p});
    const Tile mx = st(all, {0, 1}), neg = st(all, {1, 2}), sum = st(all, {2, 3}),
               inv = st(all, {3, 4});
    kb.dma_copy(xt, x({r0, r0 + p}));
    kb.tensor_reduce(mx, xt, AluOp::kMax);
    kb.tensor_scalar(neg, mx, {AluOp::kMult, -1.0f});
    kb.activation_reduce(et, sum, xt, isa::ActFunc::kExp, 1.0f, neg);
    kb.reciprocal(inv, sum);
    kb.tensor_scalar(et, et, {AluOp::kMult, inv});
    kb.dma_copy(y({r0, r0 + p}), et);
  });
  return kb.build();
}

}  // namespace trnsim::examples
