// Eager attention forward (ops.h AttentionSpec::eager): the three torch ops of Megatron-LM's
// CoreAttention and of Hugging Face's "eager" attention, each over every head before the next
// starts, their [S, S] tensors through HBM (at S = 2048 four heads' scores are 32 MiB, more
// than SBUF holds, so a compiler that keeps the ops apart streams them). The [S, S] tensors
// move in rows of kEagerDmaCols (4 KiB a partition: what saturates the DMA, HARDWARE.md s4).
//   1. scores = q k^T / sqrt(d) (baddbmm with alpha): per kv head k^T [d, S] resident; per q
//      head and 128-query tile, TensorE into PSUM per key block of 512, scaled out of PSUM
//      (ScalarE and VectorE in turn) into the dtype, stored. Every block is computed: a
//      batched matmul does not skip the masked ones.
//   2. probs = softmax(scores + causal mask) (torch's softmax: fp32 inside, the result rounded
//      once): the rows loaded, masked by GpSimd affine_select (-3e38, whose exp is exactly 0),
//      max on VectorE, exp(x - max) with its row sum on ScalarE, 1 / sum and the product on
//      VectorE, stored; software-pipelined by a row tile. Rows longer than kRowChunk go in
//      chunks, read three times (max, sum, normalise).
//   3. out = probs v (bmm): the rows loaded again, each 128-key piece transposed on TensorE and
//      multiplied by v's piece (v [128, S/128, d] resident per kv head), accumulated in PSUM
//      [p, d] over the whole row; a piece's matmul emitted after the next piece's transpose.
// q and k are prepared as the flash kernel prepares them (RMSNorm of each head with qk_norm,
// RoPE in fp32, rounded to the dtype once, transposed; by the DMA from NC-v3 on when there is
// nothing to prepare). With save_lse (training) probs is an output, the tensor autograd saves
// for the backward (attention_eager_backward.cc); else a scratch tensor, as are the scores.
// (GPT-3 6.7B's shard, 4 heads over 2048 tokens: 1.5x (trn1) to 2.7x (trn3) the DMA bound of
// its [S, S] traffic, tests/cpp/ops/attention_eager_test.cc.)
#include "ops/attention_eager.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"

namespace trnsim::ops {

namespace {
constexpr float kNegBig = -3.0e38f;
}  // namespace

void check_eager_attention(std::string_view op, const arch::ChipSpec& chip,
                           const AttentionSpec& s) {
  const int64_t parts = chip.core.sbuf.partitions;
  require_range(op, "batch", s.batch, 1, int64_t{1} << 20);
  require_range(op, "seq", s.seq, 1, int64_t{1} << 20);
  require_range(op, "head_dim", s.head_dim, 2, parts);
  require_range(op, "kv_heads", s.kv_heads, 1, 4096);
  require_range(op, "q_heads", s.q_heads, 1, 4096);
  const std::string o(op);
  if (s.q_heads % s.kv_heads != 0)
    throw InputError(
        o, "q_heads",
        fmt::format("{} q heads do not share {} kv heads evenly", s.q_heads, s.kv_heads));
  if (s.rope && s.head_dim % 2 != 0)
    throw InputError(o, "head_dim", fmt::format("rope needs an even head_dim, not {}", s.head_dim));
  if (s.kv_cache)
    throw InputError(o, "kv_cache",
                     "eager attention is modelled without a KV cache (prefill and training); "
                     "decode steps use the flash kernel");
}

EagerDims eager_dims(const arch::ChipSpec& chip, const AttentionSpec& s) {
  EagerDims e;
  e.rows = s.batch * s.q_heads * s.seq;
  e.seq = s.seq;
  e.parts = chip.core.sbuf.partitions;
  e.d = s.head_dim;
  e.group = s.q_heads / s.kv_heads;
  e.st = ceil_div(e.seq, e.parts);
  e.bk = std::min<int64_t>(kEagerKeyBlock, e.st * e.parts);
  e.wide = std::min(e.seq, kEagerDmaCols);
  e.chunk = std::min(e.seq, kRowChunk);
  e.nchunks = ceil_div(e.seq, e.chunk);
  e.tdt = chip.core.features.bit_exact_transpose ? s.dtype : num::fp32();
  e.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(e.d)));
  e.dma_t = chip.core.dma.transpose && (s.dtype.storage_bytes == 2 || s.dtype.storage_bytes == 4);
  return e;
}

void emit_attention_eager(kernel::KernelBuilder& kb, const arch::ChipSpec& chip,
                          const AttentionSpec& s) {
  using isa::ActFunc;
  using isa::AluOp;
  using isa::Engine;
  using kernel::all;
  using kernel::Tile;
  check_eager_attention("attention", chip, s);
  const EagerDims er = eager_dims(chip, s);
  const int64_t parts = er.parts, S = er.seq, d = er.d, group = er.group, st = er.st, bk = er.bk;
  const int64_t wide = er.wide, chunk = er.chunk, nchunks = er.nchunks;
  const num::Format dt = s.dtype, f32 = num::fp32(), tdt = er.tdt;
  const float scale = er.scale;
  const bool dma_t = er.dma_t;

  const kernel::Tensor q = kb.input("q", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor k = kb.input("k", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor v = kb.input("v", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor out = kb.output("out", dt, {s.batch * S, s.q_heads * d});
  kernel::Tensor cos, sin;
  if (s.rope) {
    cos = kb.input("cos", f32, {S, d});
    sin = kb.input("sin", f32, {S, d});
  }
  NormParams qn, kn;
  if (s.qk_norm) {
    qn = load_norm_params(kb, Norm::kRms, "q_", d);
    kn = load_norm_params(kb, Norm::kRms, "k_", d);
  }
  const kernel::Tensor scores = kb.scratch("scores", dt, {er.rows, er.seq});
  const kernel::Tensor probs = s.save_lse ? kb.output("probs", dt, {er.rows, er.seq})
                                          : kb.scratch("probs", dt, {er.rows, er.seq});
  // Row r of scores and probs: query r % S of q head (r / S) % Hq of sequence r / (S Hq).
  auto row0 = [&](int64_t b, int64_t hq, int64_t q0) { return (b * s.q_heads + hq) * S + q0; };

  const auto kT_bufs = kb.sbuf_buffers("kT", dt, {d, st * parts}, 2);
  const auto v_bufs = kb.sbuf_buffers("v", dt, {parts, st, d}, 2);
  const auto qT_bufs = kb.sbuf_buffers("qT", dt, {d, parts}, 3);
  const auto tp_ps = kb.psum_buffers("T_psum", tdt, {parts, parts}, 4);
  // q and k tiles prepared on their way to a transpose ([p, 1, d]: rows.h's rope views).
  const bool prep = s.rope || s.qk_norm || !dma_t;
  std::vector<Tile> ld_bufs, nf_bufs, rf_bufs, tmp_bufs, trig_bufs, xb_bufs;
  std::vector<NormScratch> scratch;
  if (prep) {
    ld_bufs = kb.sbuf_buffers("load", dt, {parts, 1, d}, 2);
    xb_bufs = kb.sbuf_buffers("prepped", dt, {parts, 1, d}, 2);
  }
  if (s.qk_norm) {
    nf_bufs = kb.sbuf_buffers("normed", f32, {parts, 1, d}, 2);
    for (int i = 0; i < 2; ++i)
      scratch.push_back(norm_scratch(kb, fmt::format("qknorm{}", i), d, Norm::kRms));
  }
  if (s.rope) {
    rf_bufs = kb.sbuf_buffers("rot", f32, {parts, 1, d}, 2);
    tmp_bufs = kb.sbuf_buffers("rot_tmp", f32, {parts, 1, d}, 2);
    trig_bufs = kb.sbuf_buffers("trig", f32, {parts, 2, d}, 2);
  }
  size_t prep_no = 0, tp_no = 0;
  // dstT [d, p] = the prepared rows src [p, d] (positions pos0..) transposed.
  auto prepare_T = [&](const Tile& dstT, const kernel::View& src, int64_t pos0, int64_t p,
                       const NormParams& np) {
    if (!prep) {
      kb.dma_transpose(dstT, src);
      return;
    }
    const size_t b = prep_no++ % 2;
    const Tile ld = ld_bufs[b]({0, p});
    kb.dma_copy(ld(all, 0, all), src);
    Tile cur = ld;
    if (s.qk_norm) {
      cur = nf_bufs[b]({0, p});
      normalize_rows(kb, Norm::kRms, s.eps, cur(all, 0, all), ld(all, 0, all), np, scratch[b], p);
    }
    if (s.rope) {
      const Tile trig = trig_bufs[b]({0, p});
      kb.dma_copy(trig(all, 0, all), cos({pos0, pos0 + p}));
      kb.dma_copy(trig(all, 1, all), sin({pos0, pos0 + p}));
      const Tile rf = rf_bufs[b]({0, p});
      rope_rotate(kb, rf, cur, trig(all, {0, 1}, all), trig(all, {1, 2}, all), rf,
                  tmp_bufs[b]({0, p}), Engine::kVector);
      cur = rf;
    }
    if (cur.dtype() != dt) {
      kb.tensor_copy(xb_bufs[b]({0, p}), cur);
      cur = xb_bufs[b]({0, p});
    }
    const Tile tp = tp_ps[tp_no++ % tp_ps.size()]({0, d}, {0, p});
    kb.transpose(tp, cur(all, 0, all));
    kb.activation(dstT, tp, ActFunc::kCopy);
  };

  // 1. scores.
  const auto s_ps = kb.psum_buffers("scores_psum", f32, {parts, bk}, 2);
  const auto sc_bufs = kb.sbuf_buffers("scores", dt, {parts, wide}, 3);
  int64_t head_no = 0, tile_no = 0, blk_no = 0, wide_no = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t g = 0; g < s.kv_heads; ++g, ++head_no) {
      const Tile& kT = kT_bufs[static_cast<size_t>(head_no % 2)];
      const kernel::Idx cols{g * d, g * d + d};
      for (int64_t r0 = 0; r0 < S; r0 += prep ? parts : bk) {
        const int64_t r1 = std::min(S, r0 + (prep ? parts : bk));
        prepare_T(kT(all, {r0, r1}), k({b * S + r0, b * S + r1}, cols), r0, r1 - r0, kn);
      }
      for (int64_t hq = g * group; hq < (g + 1) * group; ++hq)
        for (int64_t q0 = 0; q0 < S; q0 += parts, ++tile_no) {
          const int64_t p = std::min(parts, S - q0), r = row0(b, hq, q0);
          const Tile qT = qT_bufs[static_cast<size_t>(tile_no % 3)](all, {0, p});
          prepare_T(qT, q({b * S + q0, b * S + q0 + p}, {hq * d, hq * d + d}), q0, p, qn);
          for (int64_t w0 = 0; w0 < S; w0 += wide, ++wide_no) {
            const int64_t wn = std::min(wide, S - w0);
            const Tile sb = sc_bufs[static_cast<size_t>(wide_no % 3)]({0, p}, {0, wn});
            for (int64_t k0 = w0; k0 < w0 + wn; k0 += bk, ++blk_no) {
              const int64_t n = std::min(bk, w0 + wn - k0);
              const Tile ps = s_ps[static_cast<size_t>(blk_no % 2)]({0, p}, {0, n});
              const Tile dst = sb(all, {k0 - w0, k0 - w0 + n});
              kb.matmul(ps, qT, kT(all, {k0, k0 + n}));
              if (blk_no % 2 == 0)
                kb.activation(dst, ps, ActFunc::kCopy, scale);
              else
                kb.tensor_scalar(dst, ps, {AluOp::kMult, scale});
            }
            kb.dma_copy(scores({r, r + p}, {w0, w0 + wn}), sb);
          }
        }
    }

  // 2. softmax, per row tile. Software-pipelined by a tile: tile i + 1's load, mask, max and
  // exp are emitted before tile i's 1 / sum, product and store, so VectorE works on one tile
  // while ScalarE takes the other's exp (engines run their streams in order).
  const auto x_bufs = kb.sbuf_buffers("rows", dt, {parts, chunk}, 3);
  const auto e_bufs = kb.sbuf_buffers("exp", f32, {parts, chunk}, 3);
  const auto pb_bufs = kb.sbuf_buffers("probs", dt, {parts, chunk}, 3);
  const auto st_bufs = kb.sbuf_buffers("row_stats", f32, {parts, 6}, 3);
  int64_t ld_no = 0, e_no = 0, pb_no = 0;
  std::function<void()> pending;  // the previous tile's last steps
  auto flush = [&] {
    if (pending) pending();
    pending = nullptr;
  };
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t hq = 0; hq < s.q_heads; ++hq)
      for (int64_t q0 = 0; q0 < S; q0 += parts, ++tile_no) {
        const int64_t p = std::min(parts, S - q0), r = row0(b, hq, q0);
        const Tile stats = st_bufs[static_cast<size_t>(tile_no % 3)]({0, p});
        // Columns: 0 max, 1 -max, 2 sum, 3 a chunk's max or sum, 4 1 / sum.
        auto col = [stats](int64_t c) { return stats(all, {c, c + 1}); };
        // Chunk c of the rows loaded and masked (keep key c0 + i for query q0 + row when
        // c0 + i - q0 - row <= 0).
        auto load = [&](int64_t c) {
          const int64_t c0 = c * chunk, n = std::min(chunk, S - c0);
          const Tile x = x_bufs[static_cast<size_t>(ld_no++ % 3)]({0, p}, {0, n});
          kb.dma_copy(x, scores({r, r + p}, {c0, c0 + n}));
          if (s.causal && c0 + n - 1 > q0)
            kb.affine_select(x, x, AluOp::kIsLe, c0 - q0, -1, kNegBig);
          return x;
        };
        // probs = e / sum, stored.
        auto normalise = [&kb, &pb_bufs, &pb_no, probs, col, p, r](const Tile& e, int64_t c0) {
          const int64_t n = e.size(1);
          const Tile pb = pb_bufs[static_cast<size_t>(pb_no++ % 3)]({0, p}, {0, n});
          kb.tensor_scalar(pb, e, {AluOp::kMult, col(4)});
          kb.dma_copy(probs({r, r + p}, {c0, c0 + n}), pb);
        };
        auto exp_tile = [&](const Tile& x) {
          return e_bufs[static_cast<size_t>(e_no++ % 3)]({0, p}, {0, x.size(1)});
        };
        if (nchunks == 1) {
          const Tile x = load(0), e = exp_tile(x);
          kb.tensor_reduce(col(0), x, AluOp::kMax);
          kb.tensor_scalar(col(1), col(0), {AluOp::kMult, -1.0f});
          kb.activation_reduce(e, col(2), x, ActFunc::kExp, 1.0f, col(1));
          flush();
          pending = [&kb, col, normalise, e] {
            kb.reciprocal(col(4), col(2));
            normalise(e, 0);
          };
          continue;
        }
        flush();
        for (int64_t c = 0; c < nchunks; ++c) {  // the row max
          const Tile x = load(c);
          kb.tensor_reduce(c == 0 ? col(0) : col(3), x, AluOp::kMax);
          if (c > 0) kb.tensor_tensor(col(0), col(0), col(3), AluOp::kMax);
        }
        kb.tensor_scalar(col(1), col(0), {AluOp::kMult, -1.0f});
        for (int64_t c = 0; c < nchunks; ++c) {  // the row sum
          const Tile x = load(c), e = exp_tile(x);
          kb.activation_reduce(e, c == 0 ? col(2) : col(3), x, ActFunc::kExp, 1.0f, col(1));
          if (c > 0) kb.tensor_tensor(col(2), col(2), col(3), AluOp::kAdd);
        }
        kb.reciprocal(col(4), col(2));
        for (int64_t c = 0; c < nchunks; ++c) {  // normalised, stored
          const Tile x = load(c), e = exp_tile(x);
          kb.activation(e, x, ActFunc::kExp, 1.0f, col(1));
          normalise(e, c * chunk);
        }
      }
  flush();

  // 3. out = probs v.
  const auto pl_bufs = kb.sbuf_buffers("probs_in", dt, {parts, wide}, 3);
  const auto pT_bufs = kb.sbuf_buffers("probsT", dt, {parts, parts}, 6);
  const auto o_ps = kb.psum_buffers("pv_psum", f32, {parts, d}, 2);
  const auto ob_bufs = kb.sbuf_buffers("o_out", dt, {parts, d}, 2);
  int64_t piece_no = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t g = 0; g < s.kv_heads; ++g, ++head_no) {
      const Tile& vs = v_bufs[static_cast<size_t>(head_no % 2)];
      const int64_t whole = S / parts, row = s.kv_heads * d;
      if (whole > 0)  // the whole 128-position tiles in one DMA, position r at (r % 128, r / 128)
        kb.dma_copy(
            vs(all, {0, whole}, all),
            v.pattern((b * S * s.kv_heads + g) * d, {{parts, row}, {whole, parts * row}, {d, 1}}));
      if (S % parts != 0)
        kb.dma_copy(vs({0, S % parts}, whole, all),
                    v({b * S + whole * parts, b * S + S}, {g * d, g * d + d}));
      for (int64_t hq = g * group; hq < (g + 1) * group; ++hq)
        for (int64_t q0 = 0; q0 < S; q0 += parts, ++tile_no) {
          const int64_t p = std::min(parts, S - q0), r = row0(b, hq, q0);
          const Tile acc = o_ps[static_cast<size_t>(tile_no % 2)]({0, p});
          for (int64_t w0 = 0; w0 < S; w0 += wide, ++wide_no) {
            const int64_t wn = std::min(wide, S - w0);
            const Tile pl = pl_bufs[static_cast<size_t>(wide_no % 3)]({0, p}, {0, wn});
            kb.dma_copy(pl, probs({r, r + p}, {w0, w0 + wn}));
            for (int64_t j = 0; j * parts < wn; ++j, ++piece_no) {
              const int64_t kr = std::min(parts, wn - j * parts), c0 = w0 + j * parts;
              const Tile pT =
                  pT_bufs[static_cast<size_t>(piece_no % pT_bufs.size())]({0, kr}, {0, p});
              const Tile tp = tp_ps[tp_no++ % tp_ps.size()]({0, kr}, {0, p});
              kb.transpose(tp, pl(all, {j * parts, j * parts + kr}));
              if (piece_no % 2 == 0)
                kb.tensor_copy(pT, tp);
              else
                kb.activation(pT, tp, ActFunc::kCopy);
              // A piece's matmul after the next piece's transpose: TensorE runs in order, and
              // the matmul waits for the copy out of PSUM between them.
              flush();
              pending = [&kb, acc, pT, m = vs({0, kr}, c0 / parts, all), first = c0 == 0] {
                kb.matmul(acc, pT, m, {.start = first});
              };
            }
          }
          flush();
          const Tile ob = ob_bufs[static_cast<size_t>(tile_no % 2)]({0, p});
          kb.activation(ob, acc, ActFunc::kCopy);
          kb.dma_copy(out({b * S + q0, b * S + q0 + p}, {hq * d, hq * d + d}), ob);
        }
    }
}

isa::Program attention_eager(const arch::ChipSpec& chip, const AttentionSpec& s) {
  kernel::KernelBuilder kb(chip);
  emit_attention_eager(kb, chip, s);
  return kb.build();
}

}  // namespace trnsim::ops
