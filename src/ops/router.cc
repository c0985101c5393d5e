// The MoE router kernel (ops.h RouterSpec): 128 tokens at a time, the logits loaded and
// widened to fp32, max8 on VectorE gives each token's eight largest logits in descending
// order and find_index8 their experts; the first top_k of them are turned into probabilities
// by exp(v - max) on ScalarE with the add-reduction and a VectorE multiply by 1 / sum (the
// sum over all the experts' exp when the spec does not normalise the top k).
// Fewer than 8 experts are padded with -3e38, which never ranks above a real logit.
#include <algorithm>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/ops.h"
#include "ops/rows.h"

namespace trnsim::ops {

isa::Program router(const arch::ChipSpec& chip, const RouterSpec& s) {
  using isa::AluOp;
  using kernel::all;
  require_range("router", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("router", "experts", s.experts, 2, 16384);
  require_range("router", "top_k", s.top_k, 1, std::min<int64_t>(8, s.experts));
  const int64_t parts = chip.core.sbuf.partitions, E = s.experts, k = s.top_k;
  const int64_t width = std::max<int64_t>(E, 8);
  kernel::KernelBuilder kb(chip);
  const kernel::Tensor logits = kb.input("logits", s.dtype, {s.tokens, E});
  const kernel::Tensor weights = kb.output("weights", num::fp32(), {s.tokens, k});
  const num::Format u32 = num::int_format(num::Dtype::kUint32);
  const kernel::Tensor experts = kb.output("experts", u32, {s.tokens, k});
  const auto raw_bufs = kb.sbuf_buffers("logits_raw", s.dtype, {parts, E}, 2);
  const auto l_bufs = kb.sbuf_buffers("logits", num::fp32(), {parts, width}, 2);
  const auto v_bufs = kb.sbuf_buffers("top8", num::fp32(), {parts, 8}, 2);
  const auto i_bufs = kb.sbuf_buffers("top8_experts", u32, {parts, 8}, 2);
  const auto w_bufs = kb.sbuf_buffers("probs", num::fp32(), {parts, 8}, 2);
  const auto c_bufs = kb.sbuf_buffers("row_stats", num::fp32(), {parts, 2}, 2);
  for (int64_t r0 = 0, i = 0; r0 < s.tokens; r0 += parts, ++i) {
    const int64_t p = std::min(parts, s.tokens - r0);
    const size_t b = static_cast<size_t>(i % 2);
    const kernel::Tile raw = raw_bufs[b]({0, p}), lt = l_bufs[b]({0, p});
    const kernel::Tile v = v_bufs[b]({0, p}), ix = i_bufs[b]({0, p}), w = w_bufs[b]({0, p});
    const kernel::Tile st = c_bufs[b]({0, p});
    const kernel::Tile neg_max = st(all, {0, 1}), sum = st(all, {1, 2});
    kb.dma_copy(raw, logits({r0, r0 + p}));
    if (width > E) kb.memset(lt(all, {E, width}), -3.0e38);
    kb.tensor_copy(lt(all, {0, E}), raw);
    kb.max8(v, lt);
    kb.find_index8(ix, lt, v);
    kb.tensor_scalar(neg_max, v(all, {0, 1}), {AluOp::kMult, -1.0f});
    if (s.normalize) {
      kb.activation_reduce(w(all, {0, k}), sum, v(all, {0, k}), isa::ActFunc::kExp, 1.0f, neg_max);
    } else {  // the sum over every expert (in place: find_index8 has read the logits)
      kb.activation_reduce(lt(all, {0, E}), sum, lt(all, {0, E}), isa::ActFunc::kExp, 1.0f,
                           neg_max);
      kb.activation(w(all, {0, k}), v(all, {0, k}), isa::ActFunc::kExp, 1.0f, neg_max);
    }
    kb.reciprocal(sum, sum);
    kb.tensor_scalar(w(all, {0, k}), w(all, {0, k}), {AluOp::kMult, sum});
    kb.dma_copy(weights({r0, r0 + p}), w(all, {0, k}));
    kb.dma_copy(experts({r0, r0 + p}), ix(all, {0, k}));
  }
  return kb.build();
}

}  // namespace trnsim::ops
