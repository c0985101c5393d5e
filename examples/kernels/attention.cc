// Fused (flash-style) self-attention forward for one head. For each block of 128 queries, an
// online softmax runs over key blocks (512 keys, or 128 when S is not a multiple of 512):
//   s     = qT_blk.T @ kT_blk * 1/sqrt(d)          TensorE into PSUM; ScalarE scales it to SBUF
//   mask  (causal, diagonal blocks only)           GpSimd affine_select: key > query -> -3e38
//   m'    = max(m, rowmax(s))                      VectorE tensor_reduce, tensor_tensor
//   p     = exp(s - m') (bf16), rowsum             ScalarE activation with the add-reduction
//   a     = exp(m - m'); l = l * a + rowsum        ScalarE, VectorE scalar_tensor_tensor
//   o     = o * a + p @ v                          TensorE transposes p in 128-key pieces (PSUM
//                                                  -> SBUF bf16), matmuls accumulate over them
// and at the end out = o / l. Key blocks wholly above the diagonal are skipped when causal.
// kT (all keys) and v (as [128, S/128, d]) are loaded once; -3e38 stands for -inf so that
// exp() of masked scores is exactly 0 without inf arithmetic.
#include <cmath>

#include "isa/instruction.h"
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

namespace {
constexpr float kNegBig = -3.0e38f;
}  // namespace

isa::Program attention(const arch::ChipSpec& chip, int64_t seq, int64_t d, bool causal) {
  using isa::ActFunc;
  using isa::AluOp;
  using kernel::all;
  using kernel::Tile;
  constexpr int64_t kQ = 128, kSub = 128;  // query block; keys per transpose / PV matmul
  require_multiple("attention", "seq", seq, kQ);
  require_range("attention", "d_head", d, 1, 128);
  const int64_t bk = seq % 512 == 0 ? 512 : kSub;  // keys per block: one PSUM bank of scores
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  kernel::KernelBuilder kb(chip);
  const kernel::Tensor qT = kb.input("qT", num::bf16(), {d, seq});
  const kernel::Tensor kT = kb.input("kT", num::bf16(), {d, seq});
  const kernel::Tensor v = kb.input("v", num::bf16(), {seq, d});
  const kernel::Tensor out = kb.output("out", num::fp32(), {seq, d});

  const Tile kT_sb = kb.sbuf("kT", num::bf16(), {d, seq});
  kb.dma_copy(kT_sb, kT);
  const Tile v_sb = kb.sbuf("v", num::bf16(), {kSub, seq / kSub, d});
  for (int64_t j = 0; j < seq / kSub; ++j) kb.dma_copy(v_sb(all, j), v({j * kSub, (j + 1) * kSub}));

  const auto q_bufs = kb.sbuf_buffers("qT_blk", num::bf16(), {d, kQ}, 2);
  const auto s_psum = kb.psum_buffers("scores_psum", num::fp32(), {kQ, bk}, 2);
  const auto s_bufs = kb.sbuf_buffers("scores", num::fp32(), {kQ, bk}, 2);
  const auto p_bufs = kb.sbuf_buffers("probs", num::bf16(), {kQ, bk}, 2);
  const auto pT_psum = kb.psum_buffers("probsT_psum", num::fp32(), {kSub, kQ}, 2);
  const auto pT_bufs = kb.sbuf_buffers("probsT", num::bf16(), {kSub, kQ}, 2);
  const auto o_psum = kb.psum_buffers("pv_psum", num::fp32(), {kQ, d}, 2);
  // Per query block: o accumulator and the row columns m, -m', m', block max, rowsum, a, l, 1/l.
  const auto o_bufs = kb.sbuf_buffers("o_acc", num::fp32(), {kQ, d}, 2);
  const auto col_bufs = kb.sbuf_buffers("row_stats", num::fp32(), {kQ, 8}, 2);
  int64_t step = 0, sub = 0;
  for (int64_t qb = 0; qb < seq / kQ; ++qb) {
    const int64_t q0 = qb * kQ;
    const size_t qbuf = static_cast<size_t>(qb % 2);
    const Tile& q_sb = q_bufs[qbuf];
    const Tile& o_acc = o_bufs[qbuf];
    const Tile& cols = col_bufs[qbuf];
    auto col = [&](int64_t c) { return cols(all, {c, c + 1}); };
    const Tile m = col(0), neg_m = col(1), m_new = col(2), bmax = col(3), rowsum = col(4),
               alpha = col(5), l = col(6), inv_l = col(7);
    kb.dma_copy(q_sb, qT(all, {q0, q0 + kQ}));
    kb.memset(m, kNegBig);
    kb.memset(l, 0.0);
    kb.memset(o_acc, 0.0);
    for (int64_t k0 = 0; k0 < seq; k0 += bk) {
      if (causal && k0 > q0 + kQ - 1) break;  // every key of the block is after every query
      const size_t sbuf = static_cast<size_t>(step++ % 2);
      const Tile& sp = s_psum[sbuf];
      const Tile& s = s_bufs[sbuf];
      const Tile& p = p_bufs[sbuf];
      kb.matmul(sp, q_sb, kT_sb(all, {k0, k0 + bk}));
      kb.activation(s, sp, ActFunc::kCopy, scale);
      // Keep key k0 + i for query q0 + row when k0 + i - q0 - row <= 0.
      if (causal && k0 + bk - 1 > q0) kb.affine_select(s, s, AluOp::kIsLe, k0 - q0, -1, kNegBig);
      kb.tensor_reduce(bmax, s, AluOp::kMax);
      kb.tensor_tensor(m_new, m, bmax, AluOp::kMax);
      kb.tensor_scalar(neg_m, m_new, {AluOp::kMult, -1.0f});
      kb.activation_reduce(p, rowsum, s, ActFunc::kExp, 1.0f, neg_m);
      kb.activation(alpha, m, ActFunc::kExp, 1.0f, neg_m);
      kb.scalar_tensor_tensor(l, l, {AluOp::kMult, alpha}, AluOp::kAdd, rowsum);
      kb.tensor_copy(m, m_new);
      const Tile& pv = o_psum[sbuf];
      for (int64_t j = 0; j < bk / kSub; ++j) {
        const size_t tb = static_cast<size_t>(sub++ % 2);
        kb.transpose(pT_psum[tb], p(all, {j * kSub, (j + 1) * kSub}));
        kb.tensor_copy(pT_bufs[tb], pT_psum[tb]);
        kb.matmul(pv, pT_bufs[tb], v_sb(all, (k0 / kSub) + j), {.start = j == 0});
      }
      kb.scalar_tensor_tensor(o_acc, o_acc, {AluOp::kMult, alpha}, AluOp::kAdd, pv);
    }
    kb.reciprocal(inv_l, l);
    kb.tensor_scalar(o_acc, o_acc, {AluOp::kMult, inv_l});
    kb.dma_copy(out({q0, q0 + kQ}), o_acc);
  }
  return kb.build();
}

}  // namespace trnsim::examples
