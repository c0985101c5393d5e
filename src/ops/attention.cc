// Flash attention forward over token-major q, k, v (ops.h AttentionSpec), per sequence and kv
// head:
//   every 128-token tile of k is loaded, RMS-normalised per head (qk_norm) and rotated (rope)
//   in fp32, rounded to the dtype and transposed on TensorE into k^T [d, S]; v is loaded as
//   [128, S/128, d]; both stay in SBUF while each q head of the group runs;
//   per q head and 128-query tile (q prepared as k): an online softmax over key blocks of 512
//   (as examples/kernels/attention.cc): scores on TensorE, scaled out of PSUM by ScalarE,
//   the causal mask on the diagonal blocks by GpSimd affine_select, running max and sum on
//   VectorE, exp with the add-reduction on ScalarE, probabilities transposed on TensorE in
//   128-key pieces and multiplied by v, accumulated with the rescale on VectorE; out = o / l.
// Key blocks wholly above the diagonal are skipped when causal. -3e38 stands for -inf, so the
// exp of a masked score is exactly 0.
// RoPE (rotate-half, Hugging Face Llama): x' = x * cos + rotate_half(x) * sin, rotate_half(x)
// = [-x2, x1] for the halves x1, x2 of a head; cos, sin [S, d] give each position's angles.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/ops.h"
#include "ops/rows.h"

namespace trnsim::ops {

namespace {
constexpr float kNegBig = -3.0e38f;
}  // namespace

isa::Program attention(const arch::ChipSpec& chip, const AttentionSpec& s) {
  using isa::ActFunc;
  using isa::AluOp;
  using kernel::all;
  using kernel::Tile;
  const int64_t parts = chip.core.sbuf.partitions;
  require_range("attention", "batch", s.batch, 1, int64_t{1} << 20);
  require_range("attention", "seq", s.seq, 1, int64_t{1} << 20);
  require_range("attention", "head_dim", s.head_dim, 2, parts);
  require_range("attention", "kv_heads", s.kv_heads, 1, 4096);
  require_range("attention", "q_heads", s.q_heads, 1, 4096);
  if (s.q_heads % s.kv_heads != 0)
    throw InputError(
        "attention", "q_heads",
        fmt::format("{} q heads do not share {} kv heads evenly", s.q_heads, s.kv_heads));
  if (s.rope && s.head_dim % 2 != 0)
    throw InputError("attention", "head_dim",
                     fmt::format("rope needs an even head_dim, not {}", s.head_dim));
  const int64_t S = s.seq, d = s.head_dim, half = d / 2, group = s.q_heads / s.kv_heads;
  const int64_t st = ceil_div(S, parts);
  const int64_t bk = std::min<int64_t>(512, st * parts);  // keys per block: one PSUM bank
  const num::Format dt = s.dtype;
  const num::Format tdt = chip.core.features.bit_exact_transpose ? dt : num::fp32();
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));

  kernel::KernelBuilder kb(chip);
  const kernel::Tensor q = kb.input("q", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor k = kb.input("k", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor v = kb.input("v", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor out = kb.output("out", dt, {s.batch * S, s.q_heads * d});
  kernel::Tensor cos, sin;
  if (s.rope) {
    cos = kb.input("cos", num::fp32(), {S, d});
    sin = kb.input("sin", num::fp32(), {S, d});
  }
  NormParams qn, kn;
  if (s.qk_norm) {
    qn = load_norm_params(kb, Norm::kRms, "q_", d);
    kn = load_norm_params(kb, Norm::kRms, "k_", d);
  }

  const auto kT_bufs = kb.sbuf_buffers("kT", dt, {d, st * parts}, 2);
  const auto v_bufs = kb.sbuf_buffers("v", dt, {parts, st, d}, 2);
  const auto ld_bufs = kb.sbuf_buffers("load", dt, {parts, d}, 2);
  const auto rf_bufs = kb.sbuf_buffers("rot", num::fp32(), {parts, d}, 2);
  const auto nf_bufs = kb.sbuf_buffers("normed", num::fp32(), {parts, d}, 2);
  const auto tr_bufs = kb.sbuf_buffers("trig", num::fp32(), {parts, 2, d}, 2);
  const auto tmp_bufs =
      kb.sbuf_buffers("rot_tmp", num::fp32(), {parts, std::max<int64_t>(half, 1)}, 2);
  const auto xb_bufs = kb.sbuf_buffers("prepped", dt, {parts, d}, 2);
  std::vector<NormScratch> scratch;
  if (s.qk_norm)
    for (int i = 0; i < 2; ++i) scratch.push_back(norm_scratch(kb, fmt::format("qknorm{}", i), d));
  const auto tp_bufs = kb.psum_buffers("T_psum", tdt, {parts, parts}, 2);
  const auto q_bufs = kb.sbuf_buffers("qT", dt, {d, parts}, 2);
  const auto s_psum = kb.psum_buffers("scores_psum", num::fp32(), {parts, bk}, 2);
  const auto s_bufs = kb.sbuf_buffers("scores", num::fp32(), {parts, bk}, 2);
  const auto p_bufs = kb.sbuf_buffers("probs", dt, {parts, bk}, 2);
  const auto pT_bufs = kb.sbuf_buffers("probsT", dt, {parts, parts}, 2);
  const auto o_psum = kb.psum_buffers("pv_psum", num::fp32(), {parts, d}, 2);
  const auto o_bufs = kb.sbuf_buffers("o_acc", num::fp32(), {parts, d}, 2);
  const auto ob_bufs = kb.sbuf_buffers("o_out", dt, {parts, d}, 2);
  const auto col_bufs = kb.sbuf_buffers("row_stats", num::fp32(), {parts, 8}, 2);

  int64_t prep_no = 0, tp_no = 0;
  // Loads rows [row0, row0 + p) of head `col0 / d` of `src` (positions pos0..), prepares them
  // and writes their transpose to dstT [d, p].
  auto prepare_T = [&](const Tile& dstT, const kernel::Tensor& src, int64_t row0, int64_t pos0,
                       int64_t col0, int64_t p, const NormParams& np) {
    const size_t b = static_cast<size_t>(prep_no++ % 2);
    const Tile ld = ld_bufs[b]({0, p});
    kb.dma_copy(ld, src({row0, row0 + p}, {col0, col0 + d}));
    Tile cur = ld;
    if (s.qk_norm) {
      cur = nf_bufs[b]({0, p});
      normalize_rows(kb, Norm::kRms, s.eps, cur, ld, np, scratch[b], p);
    }
    if (s.rope) {
      const Tile trig = tr_bufs[b]({0, p});
      kb.dma_copy(trig(all, 0), cos({pos0, pos0 + p}));
      kb.dma_copy(trig(all, 1), sin({pos0, pos0 + p}));
      const Tile rf = rf_bufs[b]({0, p}), tmp = tmp_bufs[b]({0, p});
      const Tile c = trig(all, 0), sn = trig(all, 1);
      kb.tensor_tensor(rf, cur, c, AluOp::kMult);
      kb.tensor_tensor(tmp, cur(all, {half, d}), sn(all, {0, half}), AluOp::kMult);
      kb.tensor_tensor(rf(all, {0, half}), rf(all, {0, half}), tmp, AluOp::kSubtract);
      kb.tensor_tensor(tmp, cur(all, {0, half}), sn(all, {half, d}), AluOp::kMult);
      kb.tensor_tensor(rf(all, {half, d}), rf(all, {half, d}), tmp, AluOp::kAdd);
      cur = rf;
    }
    if (cur.dtype() != dt) {  // rounded once, to what TensorE multiplies
      const Tile xb = xb_bufs[b]({0, p});
      kb.tensor_copy(xb, cur);
      cur = xb;
    }
    const Tile& tp = tp_bufs[static_cast<size_t>(tp_no++ % 2)];
    kb.transpose(tp({0, d}, {0, p}), cur);
    kb.tensor_copy(dstT, tp({0, d}, {0, p}));
  };

  int64_t head_no = 0, qtile_no = 0, step = 0, sub = 0;
  for (int64_t bi = 0; bi < s.batch; ++bi) {
    const int64_t base = bi * S;
    for (int64_t g = 0; g < s.kv_heads; ++g, ++head_no) {
      const Tile& kT = kT_bufs[static_cast<size_t>(head_no % 2)];
      const Tile& vs = v_bufs[static_cast<size_t>(head_no % 2)];
      for (int64_t t = 0; t < st; ++t) {
        const int64_t p = std::min(parts, S - t * parts);
        prepare_T(kT(all, {t * parts, t * parts + p}), k, base + t * parts, t * parts, g * d, p,
                  kn);
        kb.dma_copy(vs({0, p}, t), v({base + t * parts, base + t * parts + p}, {g * d, g * d + d}));
      }
      for (int64_t hq = g * group; hq < (g + 1) * group; ++hq) {
        for (int64_t q0 = 0; q0 < S; q0 += parts, ++qtile_no) {
          const int64_t p = std::min(parts, S - q0);
          const size_t qb = static_cast<size_t>(qtile_no % 2);
          const Tile qT = q_bufs[qb](all, {0, p});
          prepare_T(qT, q, base + q0, q0, hq * d, p, qn);
          const Tile o_acc = o_bufs[qb]({0, p});
          const Tile cols = col_bufs[qb]({0, p});
          auto col = [&](int64_t c) { return cols(all, {c, c + 1}); };
          const Tile m = col(0), neg_m = col(1), m_new = col(2), bmax = col(3), rowsum = col(4),
                     alpha = col(5), l = col(6), inv_l = col(7);
          kb.memset(m, kNegBig);
          kb.memset(l, 0.0);
          kb.memset(o_acc, 0.0);
          for (int64_t k0 = 0; k0 < S; k0 += bk) {
            if (s.causal && k0 > q0 + p - 1) break;  // every key of the block follows every query
            const int64_t kbn = std::min(bk, S - k0);
            const size_t sb = static_cast<size_t>(step++ % 2);
            const Tile sp = s_psum[sb]({0, p}, {0, kbn});
            const Tile sc = s_bufs[sb]({0, p}, {0, kbn});
            const Tile pr = p_bufs[sb]({0, p}, {0, kbn});
            kb.matmul(sp, qT, kT(all, {k0, k0 + kbn}));
            kb.activation(sc, sp, ActFunc::kCopy, scale);
            // Keep key k0 + i for query q0 + row when k0 + i - q0 - row <= 0.
            if (s.causal && k0 + kbn - 1 > q0)
              kb.affine_select(sc, sc, AluOp::kIsLe, k0 - q0, -1, kNegBig);
            kb.tensor_reduce(bmax, sc, AluOp::kMax);
            kb.tensor_tensor(m_new, m, bmax, AluOp::kMax);
            kb.tensor_scalar(neg_m, m_new, {AluOp::kMult, -1.0f});
            kb.activation_reduce(pr, rowsum, sc, ActFunc::kExp, 1.0f, neg_m);
            kb.activation(alpha, m, ActFunc::kExp, 1.0f, neg_m);
            kb.scalar_tensor_tensor(l, l, {AluOp::kMult, alpha}, AluOp::kAdd, rowsum);
            kb.tensor_copy(m, m_new);
            const Tile pv = o_psum[sb]({0, p});
            for (int64_t j = 0; j * parts < kbn; ++j) {
              const int64_t kr = std::min(parts, kbn - j * parts);
              const size_t tb = static_cast<size_t>(sub++ % 2);
              const Tile& tp = tp_bufs[static_cast<size_t>(tp_no++ % 2)];
              kb.transpose(tp({0, kr}, {0, p}), pr(all, {j * parts, j * parts + kr}));
              kb.tensor_copy(pT_bufs[tb]({0, kr}, {0, p}), tp({0, kr}, {0, p}));
              kb.matmul(pv, pT_bufs[tb]({0, kr}, {0, p}), vs({0, kr}, (k0 / parts) + j),
                        {.start = j == 0});
            }
            kb.scalar_tensor_tensor(o_acc, o_acc, {AluOp::kMult, alpha}, AluOp::kAdd, pv);
          }
          kb.reciprocal(inv_l, l);
          const Tile ob = ob_bufs[qb]({0, p});
          kb.tensor_scalar(ob, o_acc, {AluOp::kMult, inv_l});
          kb.dma_copy(out({base + q0, base + q0 + p}, {hq * d, hq * d + d}), ob);
        }
      }
    }
  }
  return kb.build();
}

}  // namespace trnsim::ops
