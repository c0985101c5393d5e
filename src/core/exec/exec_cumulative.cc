// tensor_scalar_cumulative (NKI nki.isa.tensor_scalar_cumulative): per partition, along the
// free elements in order, r = op1(src[i] op0 arg0, r) (reverse0: arg0 op0 src[i]) and dst[i] = r,
// in fp32 as the engine computes, each result cast to dst's dtype. r starts at arg1 (the NKI
// front end passes op1's identity for reduce_cmd.reset_reduce and imm1 for load_reduce), or with
// `accumulate` (reduce_cmd.reduce) at the lane's VectorE accumulator register; the register
// keeps the last r, so a row split over several instructions continues where it stopped.
#include <fmt/format.h>

#include "core/exec/alu.h"
#include "core/exec/exec_context.h"
#include "core/exec/semantics.h"
#include "isa/names.h"

namespace trnsim::core {

void exec_tensor_scalar_cumulative(ExecContext& ctx) {
  if (!ctx.same_shape(1, 0)) return;
  using isa::AluOp;
  const AluOp op1 = ctx.in.p.op1;
  if (!isa::is_cumulative_op(op1))
    return static_cast<void>(ctx.fault(mem::FaultKind::kShape,
                                       fmt::format("op1={}: the running op is add, subtract, mult, "
                                                   "max or min",
                                                   isa::kAluOpNames.name(op1))));
  const int64_t rows = ctx.rows(0), cols = ctx.cols(0);
  const auto a = ctx.scalar(ctx.in.p.arg0, rows, "arg0");
  const auto init = ctx.scalar(ctx.in.p.arg1, rows, "arg1");
  if (!a || !init) return;
  const mem::Tile& x = ctx.read(1);
  mem::Tile& out = ctx.temp(0, rows, cols);
  std::vector<float>& acc = ctx.vector_accumulator();
  const int64_t p0 = ctx.ap(0).start_partition;
  for (int64_t r = 0; r < rows; ++r) {
    float& reg = acc[static_cast<size_t>(p0 + r)];
    if (!ctx.in.p.dma_accumulate) reg = init->at(r);
    const float s = a->at(r);
    const float* in = x.row(r);
    float* o = out.row(r);
    for (int64_t i = 0; i < cols; ++i) {
      const float t = ctx.in.p.reverse0 ? alu(ctx.in.p.op0, s, in[i]) : alu(ctx.in.p.op0, in[i], s);
      reg = alu(op1, t, reg);
      o[i] = reg;
    }
  }
  ctx.write(0, out);
}

}  // namespace trnsim::core
