// Eager attention backward (train_ops.h; AttentionSpec::eager): autograd's backward of the
// forward's three ops (attention_eager.cc), in reverse, from the probabilities it saved, each
// [S, S] gradient through HBM. Per kv head:
//   1. bmm's backward: v^T [d, S] resident (transposed by the DMA from NC-v3 on, else on
//      TensorE); per q head and 128-query tile, dout^T prepared once, then per key block of
//      512: dP = dout v^T (TensorE into PSUM, copied out by ScalarE and VectorE in turn),
//      stored; and the probabilities' rows loaded, each 128-key piece the stationary of
//      dv_t += P^T dout (the queries on its partitions are the contraction, so no transpose),
//      accumulated over the query tiles in PSUM (or, when a head's [S, d] fp32 takes more than
//      half of PSUM, added into an SBUF accumulator by VectorE). dv stored at the end.
//   2. softmax's backward, per row tile: P and dP loaded, D = rowsum(P * dP) (the product on
//      GpSimd, the sum on VectorE, fp32), dS = (dP - D) * P in one VectorE pass, rounded to
//      the dtype and stored (rows longer than kRowChunk in chunks: D first, then dS).
//   3. baddbmm's backward: k [128, S/128, d] resident (rotated with RoPE, rounded); per q head
//      and query tile, q prepared (rotated) once, then per key block dS loaded once: each piece
//      the stationary of dk_t += dS^T q (accumulated as dv) and, transposed on TensorE, of
//      dq += dS k (in PSUM over the whole row, a piece's matmul after the next piece's
//      transpose); dq scaled by 1 / sqrt(d) out of PSUM, rotated back (rows.h
//      rope_rotate_back) and stored; dk likewise at the end.
// The [S, S] tensors move in rows of kEagerDmaCols (4 KiB a partition).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/attention_eager.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

isa::Program attention_eager_backward(const arch::ChipSpec& chip, const AttentionSpec& s) {
  using isa::ActFunc;
  using isa::AluOp;
  using isa::Engine;
  using kernel::all;
  using kernel::Tile;
  constexpr std::string_view kOp = "attention_backward";
  check_eager_attention(kOp, chip, s);
  if (s.qk_norm)
    throw InputError(std::string(kOp), "qk_norm",
                     "a per-head q/k norm stays a norm node when training (its own backward)");
  const EagerDims er = eager_dims(chip, s);
  const int64_t parts = er.parts, S = er.seq, d = er.d, group = er.group, st = er.st, bk = er.bk;
  const int64_t wide = er.wide, chunk = er.chunk, nchunks = er.nchunks;
  const num::Format dt = s.dtype, f32 = num::fp32(), tdt = er.tdt;
  const float scale = er.scale;
  const bool dma_t = er.dma_t;

  kernel::KernelBuilder kb(chip);
  const kernel::Tensor q = kb.input("q", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor k = kb.input("k", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor v = kb.input("v", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor dout = kb.input("dout", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor probs = kb.input("probs", dt, {er.rows, er.seq});
  kernel::Tensor cos, sin;
  if (s.rope) {
    cos = kb.input("cos", f32, {S, d});
    sin = kb.input("sin", f32, {S, d});
  }
  const kernel::Tensor dq = kb.output("dq", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor dk = kb.output("dk", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor dv = kb.output("dv", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor dprobs = kb.scratch("dprobs", dt, {er.rows, er.seq});
  const kernel::Tensor dscores = kb.scratch("dscores", dt, {er.rows, er.seq});
  auto row0 = [&](int64_t b, int64_t hq, int64_t q0) { return (b * s.q_heads + hq) * S + q0; };
  // Rows [b S + t0 128, ...) of columns [col0, col0 + d) of a [B S, W] tensor as [128, n, d]:
  // position 128 (t0 + i) + r at partition r, index i (the resident tiles' layout).
  auto tiled = [&](const kernel::Tensor& t, int64_t b, int64_t t0, int64_t n, int64_t col0) {
    const int64_t w = t.size(1);
    return t.pattern((b * S + t0 * parts) * w + col0, {{parts, w}, {n, parts * w}, {d, 1}});
  };

  const auto tp_ps = kb.psum_buffers("T_psum", tdt, {parts, parts}, 4);
  const auto acc_ps = kb.psum_buffers("acc_psum", f32, {parts, d}, 2);  // dq
  // dv and dk accumulate over the query tiles in PSUM when a kv head's [S, d] fp32 takes at
  // most half of it (S d <= 2048 x 128), else piece by piece into SBUF (a VectorE add each).
  const bool psum_acc = st * d * 4 <= 4 * chip.core.psum.bank_bytes;
  const auto key_ps = psum_acc ? kb.psum_buffers("key_acc", f32, {parts, d}, static_cast<int>(st))
                               : std::vector<Tile>{};
  const auto part_ps = psum_acc ? std::vector<Tile>{}
                                : kb.psum_buffers("part_psum", f32, {parts, d}, 2);  // dv_t, dk_t
  const auto blk_ps = kb.psum_buffers("dP_psum", f32, {parts, bk}, 2);
  const auto rowsT_bufs = kb.sbuf_buffers("rowsT", dt, {d, parts}, 2);   // dout^T
  const auto rows_bufs = kb.sbuf_buffers("rows", dt, {parts, 1, d}, 3);  // dout, q
  const auto blk_bufs = kb.sbuf_buffers("block", dt, {parts, wide}, 3);  // P, dS rows in
  const auto dpo_bufs = kb.sbuf_buffers("dP_out", dt, {parts, wide}, 2);
  const auto dsT_bufs = kb.sbuf_buffers("dST", dt, {parts, parts}, 6);
  const Tile acc = psum_acc ? Tile{} : kb.sbuf("acc", f32, {parts, st, d});  // dv, then dk
  const auto res_bufs = kb.sbuf_buffers("resident", dt, {parts, st, d}, 2);  // k
  const Tile vT = kb.sbuf("vT", dt, {d, st * parts});
  const auto out_bufs = kb.sbuf_buffers("grad_out", dt, {parts, 1, d}, 2);
  std::vector<Tile> rot_bufs, trig_bufs, gf_bufs;
  if (s.rope) {
    rot_bufs = kb.sbuf_buffers("rot", f32, {parts, 1, d}, 4);
    trig_bufs = kb.sbuf_buffers("trig", f32, {parts, 2, d}, 2);
    gf_bufs = kb.sbuf_buffers("grad_f32", f32, {parts, 1, d}, 2);
  }
  size_t wide_no = 0;
  // A step emitted late (a matmul after the next transpose; a store after the next GpSimd op).
  std::function<void()> pending;
  auto flush = [&] {
    if (pending) pending();
    pending = nullptr;
  };
  size_t tp_no = 0, rows_no = 0, blk_no = 0, trig_no = 0, rot_no = 0, out_no = 0, part_no = 0;
  auto transpose_into = [&](const Tile& dstT, const Tile& src, bool on_act) {
    const Tile tp = tp_ps[tp_no++ % tp_ps.size()]({0, src.size(1)}, {0, src.size(0)});
    kb.transpose(tp, src);
    if (on_act)
      kb.activation(dstT, tp, ActFunc::kCopy);
    else
      kb.tensor_copy(dstT, tp);
  };
  // The angles of positions pos0.. as [p, 2, d] (cos, sin).
  auto trig_of = [&](int64_t pos0, int64_t p) {
    const Tile t = trig_bufs[trig_no++ % trig_bufs.size()]({0, p});
    kb.dma_copy(t(all, 0, all), cos({pos0, pos0 + p}));
    kb.dma_copy(t(all, 1, all), sin({pos0, pos0 + p}));
    return t;
  };
  // Rows [p, d] of q or k at positions pos0.., rotated with RoPE and rounded, into dst [p, 1, d].
  auto load_rows = [&](const Tile& dst, const kernel::View& src, int64_t pos0, int64_t p) {
    if (!s.rope) {
      kb.dma_copy(dst(all, 0, all), src);
      return;
    }
    const Tile raw = rows_bufs[rows_no++ % rows_bufs.size()]({0, p});
    kb.dma_copy(raw(all, 0, all), src);
    const Tile t = trig_of(pos0, p);
    const Tile rf = rot_bufs[rot_no++ % 4]({0, p}), tmp = rot_bufs[rot_no++ % 4]({0, p});
    rope_rotate(kb, dst, raw, t(all, {0, 1}, all), t(all, {1, 2}, all), rf, tmp, Engine::kGpSimd);
  };
  // A gradient [p, d] (fp32, in PSUM or SBUF) scaled by `mul`, rotated back with RoPE, rounded
  // and stored to dst.
  auto store_grad = [&](const kernel::View& dst, const Tile& g, float mul, int64_t pos0,
                        int64_t p) {
    const Tile o = out_bufs[out_no++ % out_bufs.size()]({0, p});
    if (!s.rope) {
      kb.activation(o(all, 0, all), g, ActFunc::kCopy, mul);
    } else {
      const Tile gf = gf_bufs[out_no % gf_bufs.size()]({0, p});
      kb.activation(gf(all, 0, all), g, ActFunc::kCopy, mul);
      const Tile t = trig_of(pos0, p);
      const Tile a = rot_bufs[rot_no++ % 4]({0, p}), u = rot_bufs[rot_no++ % 4]({0, p});
      rope_rotate_back(kb, o, gf, t(all, {0, 1}, all), t(all, {1, 2}, all), a, u, Engine::kGpSimd);
    }
    kb.dma_copy(dst, o(all, 0, all));
  };
  // The key tiles of one kv head's accumulator (in PSUM, or SBUF), stored (scaled, rotated
  // back) to `grad`.
  auto acc_tile = [&](int64_t t, int64_t p) {
    return psum_acc ? key_ps[static_cast<size_t>(t)]({0, p}) : acc({0, p}, t, all);
  };
  auto store_acc = [&](const kernel::Tensor& grad, int64_t b, int64_t g, float mul, bool rotate) {
    for (int64_t t = 0; t < st; ++t) {
      const int64_t r0 = t * parts, p = std::min(parts, S - r0);
      const kernel::View dst = grad({b * S + r0, b * S + r0 + p}, {g * d, g * d + d});
      if (rotate) {
        store_grad(dst, acc_tile(t, p), mul, r0, p);
      } else {
        const Tile o = out_bufs[out_no++ % out_bufs.size()]({0, p});
        kb.activation(o(all, 0, all), acc_tile(t, p), ActFunc::kCopy, mul);
        kb.dma_copy(dst, o(all, 0, all));
      }
    }
  };
  // Key tile c0 / 128 + j of the accumulator += block[:, piece j]^T rhs, per 128-key piece of a
  // row block; `first`: the kv head's first query tile (a PSUM accumulator starts there).
  auto accumulate = [&](const Tile& block, const Tile& rhs, int64_t c0, bool first) {
    const int64_t n = block.size(1);
    for (int64_t j = 0; j * parts < n; ++j) {
      const int64_t kr = std::min(parts, n - j * parts);
      const Tile piece = block(all, {j * parts, j * parts + kr});
      if (psum_acc) {
        kb.matmul(acc_tile(c0 / parts + j, kr), piece, rhs, {.start = first});
        continue;
      }
      const Tile ps = part_ps[part_no++ % part_ps.size()]({0, kr});
      kb.matmul(ps, piece, rhs);
      const Tile a = acc({0, kr}, c0 / parts + j, all);
      kb.tensor_tensor(a, a, ps, AluOp::kAdd);
    }
  };

  // 1. dP = dout v^T, dv = P^T dout.
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t g = 0; g < s.kv_heads; ++g) {
      const kernel::Idx cols{g * d, g * d + d};
      for (int64_t r0 = 0; r0 < S; r0 += dma_t ? bk : parts) {
        const int64_t r1 = std::min(S, r0 + (dma_t ? bk : parts));
        if (dma_t) {
          kb.dma_transpose(vT(all, {r0, r1}), v({b * S + r0, b * S + r1}, cols));
        } else {
          const Tile raw = rows_bufs[rows_no++ % rows_bufs.size()]({0, r1 - r0});
          kb.dma_copy(raw(all, 0, all), v({b * S + r0, b * S + r1}, cols));
          transpose_into(vT(all, {r0, r1}), raw(all, 0, all), true);
        }
      }
      if (!psum_acc) kb.memset(acc, 0.0, Engine::kGpSimd);
      for (int64_t hq = g * group; hq < (g + 1) * group; ++hq)
        for (int64_t q0 = 0; q0 < S; q0 += parts) {
          const int64_t p = std::min(parts, S - q0), r = row0(b, hq, q0);
          const kernel::View dout_rows = dout({b * S + q0, b * S + q0 + p}, {hq * d, hq * d + d});
          const Tile dO = rows_bufs[rows_no++ % rows_bufs.size()]({0, p});
          kb.dma_copy(dO(all, 0, all), dout_rows);
          const Tile dOT = rowsT_bufs[rows_no % 2](all, {0, p});
          if (dma_t)
            kb.dma_transpose(dOT, dout_rows);
          else
            transpose_into(dOT, dO(all, 0, all), true);
          for (int64_t w0 = 0; w0 < S; w0 += wide, ++wide_no) {
            const int64_t wn = std::min(wide, S - w0);
            const Tile o = dpo_bufs[wide_no % 2]({0, p}, {0, wn});
            for (int64_t k0 = w0; k0 < w0 + wn; k0 += bk, ++blk_no) {
              const int64_t n = std::min(bk, w0 + wn - k0);
              const Tile ps = blk_ps[blk_no % 2]({0, p}, {0, n});
              kb.matmul(ps, dOT, vT(all, {k0, k0 + n}));
              if (blk_no % 2 == 0)
                kb.activation(o(all, {k0 - w0, k0 - w0 + n}), ps, ActFunc::kCopy);
              else
                kb.tensor_copy(o(all, {k0 - w0, k0 - w0 + n}), ps);
            }
            kb.dma_copy(dprobs({r, r + p}, {w0, w0 + wn}), o);
            const Tile pb = blk_bufs[wide_no % 3]({0, p}, {0, wn});
            kb.dma_copy(pb, probs({r, r + p}, {w0, w0 + wn}));
            accumulate(pb, dO(all, 0, all), w0, hq == g * group && q0 == 0);
          }
        }
      store_acc(dv, b, g, 1.0f, false);
    }

  // 2. dS = (dP - rowsum(P dP)) P.
  const auto p_bufs = kb.sbuf_buffers("p_rows", dt, {parts, chunk}, 2);
  const auto dp_bufs = kb.sbuf_buffers("dp_rows", dt, {parts, chunk}, 2);
  const auto prod_bufs = kb.sbuf_buffers("p_dp", f32, {parts, chunk}, 2);
  const auto ds_bufs = kb.sbuf_buffers("ds_rows", dt, {parts, chunk}, 3);
  const auto st_bufs = kb.sbuf_buffers("row_stats", f32, {parts, 2}, 2);
  size_t ch_no = 0, ds_no = 0, tile_no = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t hq = 0; hq < s.q_heads; ++hq)
      for (int64_t q0 = 0; q0 < S; q0 += parts, ++tile_no) {
        const int64_t p = std::min(parts, S - q0), r = row0(b, hq, q0);
        const Tile stats = st_bufs[tile_no % 2]({0, p});
        const Tile D = stats(all, {0, 1}), part = stats(all, {1, 2});
        struct Loaded {
          Tile P, dP;
        };
        auto load = [&](int64_t c) {
          const int64_t c0 = c * chunk, n = std::min(chunk, S - c0);
          const size_t i = ch_no++ % 2;
          Loaded l{p_bufs[i]({0, p}, {0, n}), dp_bufs[i]({0, p}, {0, n})};
          kb.dma_copy(l.P, probs({r, r + p}, {c0, c0 + n}));
          kb.dma_copy(l.dP, dprobs({r, r + p}, {c0, c0 + n}));
          return l;
        };
        auto row_dot = [&](const Loaded& l, int64_t c) {
          const Tile prod = prod_bufs[ch_no % 2]({0, p}, {0, l.P.size(1)});
          kb.tensor_tensor(prod, l.P, l.dP, AluOp::kMult, Engine::kGpSimd);
          flush();  // the previous chunk's store, after this GpSimd step
          kb.tensor_reduce(c == 0 ? D : part, prod, AluOp::kAdd);
          if (c > 0) kb.tensor_tensor(D, D, part, AluOp::kAdd);
        };
        auto ds_out = [&](const Loaded& l, int64_t c) {
          const int64_t c0 = c * chunk, n = l.P.size(1);
          const Tile ds = ds_bufs[ds_no++ % 3]({0, p}, {0, n});
          kb.scalar_tensor_tensor(ds, l.dP, {AluOp::kSubtract, D}, AluOp::kMult, l.P);
          flush();
          pending = [&kb, dst = dscores({r, r + p}, {c0, c0 + n}), ds] { kb.dma_copy(dst, ds); };
        };
        if (nchunks == 1) {
          const Loaded l = load(0);
          row_dot(l, 0);
          ds_out(l, 0);
          continue;
        }
        for (int64_t c = 0; c < nchunks; ++c) row_dot(load(c), c);
        for (int64_t c = 0; c < nchunks; ++c) ds_out(load(c), c);
      }

  flush();

  // 3. dq = dS k / sqrt(d), dk = dS^T q / sqrt(d).
  size_t head_no = 0, piece_no = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t g = 0; g < s.kv_heads; ++g, ++head_no) {
      const Tile& kr_all = res_bufs[head_no % 2];
      if (!s.rope) {
        if (S / parts > 0)
          kb.dma_copy(kr_all(all, {0, S / parts}, all), tiled(k, b, 0, S / parts, g * d));
        if (S % parts != 0)
          kb.dma_copy(kr_all({0, S % parts}, S / parts, all),
                      k({b * S + (S / parts) * parts, b * S + S}, {g * d, g * d + d}));
      } else {
        for (int64_t t = 0; t < st; ++t) {
          const int64_t r0 = t * parts, p = std::min(parts, S - r0);
          load_rows(kr_all({0, p}, {t, t + 1}, all),
                    k({b * S + r0, b * S + r0 + p}, {g * d, g * d + d}), r0, p);
        }
      }
      if (!psum_acc) kb.memset(acc, 0.0, Engine::kGpSimd);
      for (int64_t hq = g * group; hq < (g + 1) * group; ++hq)
        for (int64_t q0 = 0; q0 < S; q0 += parts, ++tile_no) {
          const int64_t p = std::min(parts, S - q0), r = row0(b, hq, q0);
          const Tile qr = rows_bufs[rows_no++ % rows_bufs.size()]({0, p});
          load_rows(qr, q({b * S + q0, b * S + q0 + p}, {hq * d, hq * d + d}), q0, p);
          const Tile dq_acc = acc_ps[tile_no % 2]({0, p});
          for (int64_t w0 = 0; w0 < S; w0 += wide, ++wide_no) {
            const int64_t n = std::min(wide, S - w0);
            const Tile dsb = blk_bufs[wide_no % 3]({0, p}, {0, n});
            kb.dma_copy(dsb, dscores({r, r + p}, {w0, w0 + n}));
            accumulate(dsb, qr(all, 0, all), w0, hq == g * group && q0 == 0);
            for (int64_t j = 0; j * parts < n; ++j, ++piece_no) {
              const int64_t kr = std::min(parts, n - j * parts), c0 = w0 + j * parts;
              const Tile dsT = dsT_bufs[piece_no % dsT_bufs.size()]({0, kr}, {0, p});
              transpose_into(dsT, dsb(all, {j * parts, j * parts + kr}), piece_no % 2 == 0);
              // A piece's matmul after the next piece's transpose (TensorE runs in order).
              flush();
              pending = [&kb, dq_acc, dsT, m = kr_all({0, kr}, c0 / parts, all), first = c0 == 0] {
                kb.matmul(dq_acc, dsT, m, {.start = first});
              };
            }
          }
          flush();
          store_grad(dq({b * S + q0, b * S + q0 + p}, {hq * d, hq * d + d}), dq_acc, scale, q0, p);
        }
      store_acc(dk, b, g, scale, s.rope);
    }
  return kb.build();
}

}  // namespace trnsim::ops
