// The elementwise kernel (ops.h ElementwiseSpec): 128 tokens at a time; add and mul on
// VectorE, activations on ScalarE, computed in fp32 and rounded once to the dtype.
#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/ops.h"
#include "ops/rows.h"

namespace trnsim::ops {

void emit_elementwise(kernel::KernelBuilder& kb, const arch::ChipSpec& chip,
                      const ElementwiseSpec& s) {
  require_range("elementwise", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("elementwise", "features", s.features, 1, 65536);
  if (s.op == Elementwise::kAct && (s.act == Act::kNone || is_glu(s.act)))
    throw InputError("elementwise", "act",
                     "an activation kernel needs a single activation, not none or a GLU");
  const int64_t parts = chip.core.sbuf.partitions;
  const bool binary = s.op != Elementwise::kAct;
  const kernel::Tensor a = kb.input("a", s.dtype, {s.tokens, s.features});
  const kernel::Tensor b =
      binary ? kb.input("b", s.dtype, {s.tokens, s.features}) : kernel::Tensor{};
  const kernel::Tensor y = kb.output("y", s.dtype, {s.tokens, s.features});
  const auto a_bufs = kb.sbuf_buffers("a", s.dtype, {parts, s.features}, 2);
  const auto b_bufs =
      binary ? kb.sbuf_buffers("b", s.dtype, {parts, s.features}, 2) : std::vector<kernel::Tile>{};
  for (int64_t r0 = 0, i = 0; r0 < s.tokens; r0 += parts, ++i) {
    const int64_t p = std::min(parts, s.tokens - r0);
    const size_t k = static_cast<size_t>(i % 2);
    const kernel::Tile at = a_bufs[k]({0, p});
    kb.dma_copy(at, a({r0, r0 + p}));
    if (binary) {
      const kernel::Tile bt = b_bufs[k]({0, p});
      kb.dma_copy(bt, b({r0, r0 + p}));
      kb.tensor_tensor(at, at, bt,
                       s.op == Elementwise::kAdd ? isa::AluOp::kAdd : isa::AluOp::kMult);
    } else {
      kb.activation(at, at, act_func(s.act));
    }
    kb.dma_copy(y({r0, r0 + p}), at);
  }
}

isa::Program elementwise(const arch::ChipSpec& chip, const ElementwiseSpec& s) {
  kernel::KernelBuilder kb(chip);
  emit_elementwise(kb, chip, s);
  return kb.build();
}

}  // namespace trnsim::ops
