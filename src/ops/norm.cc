// The standalone norm kernel (ops.h NormSpec): 128 tokens at a time, loaded (plus delta, the
// sum stored as h), normalised in fp32 by rows.h and stored in the dtype. The compiler uses it
// where no matmul follows to fuse into (a post-norm block's second norm, a final norm).
#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/ops.h"
#include "ops/rows.h"

namespace trnsim::ops {

void emit_norm(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const NormSpec& s) {
  require_range("norm", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("norm", "features", s.features, 1, 65536);
  if (s.norm == Norm::kNone)
    throw InputError("norm", "norm", "a norm kernel needs rmsnorm or layernorm");
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, F = s.features;
  const kernel::Tensor x = kb.input("x", s.dtype, {T, F});
  kernel::Tensor delta, h;
  if (s.residual_in) {
    delta = kb.input("delta", s.dtype, {T, F});
    h = kb.output("h", s.dtype, {T, F});
  }
  const NormParams np = load_norm_params(kb, s.norm, "", F);
  const kernel::Tensor y = kb.output("y", s.dtype, {T, F});
  const auto x_bufs = kb.sbuf_buffers("x", s.dtype, {parts, F}, 2);
  const auto d_bufs = s.residual_in ? kb.sbuf_buffers("delta", s.dtype, {parts, F}, 2)
                                    : std::vector<kernel::Tile>{};
  const auto y_bufs = kb.sbuf_buffers("y", s.dtype, {parts, F}, 2);
  std::vector<NormScratch> scratch;
  for (int i = 0; i < 2; ++i)
    scratch.push_back(norm_scratch(kb, i == 0 ? "norm0" : "norm1", F, s.norm));
  for (int64_t r0 = 0, i = 0; r0 < T; r0 += parts, ++i) {
    const int64_t p = std::min(parts, T - r0);
    const size_t b = static_cast<size_t>(i % 2);
    const kernel::Tile xt = x_bufs[b]({0, p}), yt = y_bufs[b]({0, p});
    kb.dma_copy(xt, x({r0, r0 + p}));
    if (s.residual_in) {
      const kernel::Tile dt = d_bufs[b]({0, p});
      kb.dma_copy(dt, delta({r0, r0 + p}));
      kb.tensor_tensor(xt, xt, dt, isa::AluOp::kAdd);
      kb.dma_copy(h({r0, r0 + p}), xt);
    }
    normalize_rows(kb, s.norm, s.eps, yt, xt, np, scratch[b], p);
    kb.dma_copy(y({r0, r0 + p}), yt);
  }
}

isa::Program norm(const arch::ChipSpec& chip, const NormSpec& s) {
  kernel::KernelBuilder kb(chip);
  emit_norm(kb, chip, s);
  return kb.build();
}

}  // namespace trnsim::ops
