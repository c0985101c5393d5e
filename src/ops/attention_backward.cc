// Flash attention backward (train_ops.h attention_backward; FlashAttention-2's algorithm, with
// the engine split of NKI's flash_attn_bwd), over the forward's token-major tensors, per
// sequence and kv head:
//   k is loaded in chunks of four 128-key tiles, rotated (rope) in fp32 and rounded to the
//   dtype as the forward prepares it, kept as k [128, S/128, d] (the moving operand of dq)
//   and transposed on TensorE into k^T [d, S] (of the scores); v is transposed into v^T
//   [d, S] (of dP). dk and dv accumulate in fp32 SBUF tiles [128, S/128, d] over every query
//   tile of every q head of the group; at the end they are scaled, rotated back and stored.
//   The q heads of the group are taken up to four at a time per 128-query tile ("units": their
//   columns are adjacent, so each of q, dout, out, lse is one load, and q's rotation and
//   dout * out for D = rowsum(dout * out) (fp32) one GpSimd pass each). Four (q head, query
//   tile) chains ("lanes", as in the forward) run together, and per 128-key tile, per lane:
//     S = q k^T (PSUM); P = exp(scale S - lse) on ScalarE, rounded to the dtype (on a
//     diagonal tile S is scaled into SBUF and masked first by GpSimd affine_select with
//     -3e38, whose exp is exactly 0); dP = dout v^T (PSUM); dS = (dP - D) * P in one VectorE
//     scalar_tensor_tensor, rounded; dv_t += P^T dout and dk_t += dS^T q (P and dS are the
//     stationaries as they lie: the queries on their partitions are the contraction); dS^T
//     by a TensorE transpose (ScalarE copies it out of PSUM); dq += dS k in PSUM over the
//     key tiles.
//   The lanes' dv_t and dk_t accumulate in one PSUM tile each per key tile, which VectorE
//   then adds into the SBUF accumulators (one add per four blocks). dq leaves PSUM once per
//   lane, scaled by ScalarE, rotated back (GpSimd) and rounded. Key tiles wholly above the
//   diagonal are skipped when causal.
// Loop order: query tiles outside, key tiles inside, so that dq accumulates in PSUM and only
// dk and dv need whole-sequence accumulators: 2 x S x d x 4 bytes over 128 partitions, 64 KiB
// per partition at d = 128 and S = 8192, with k, k^T, v^T (48 KiB) the whole resident set,
// which fits Trn1's 176 KiB. NKI's order (key tiles outside) keeps dk and dv in PSUM instead,
// but needs dq of every q head of the group resident (32 KiB each at S = 8192: 128 KiB for a
// group of four) and prepares each query tile again for every key tile.
// Schedule: all the (lane group, key tile) steps of a kv head form one software pipeline,
// across group boundaries: the scores and dP of step i + 1 are emitted before the transposes
// and dv / dk matmuls of step i, dq's matmuls a step behind those, so that TensorE works on
// one step while ScalarE and VectorE finish the previous one. A lane group's loads and GpSimd
// work are emitted two groups ahead, its transposes just before its first step. When causal,
// the lane groups alternate between the longest and the shortest left (their loads and
// GpSimd work, about the same per group, then overlap the long groups' compute). When SBUF
// has room, the next kv head's k and v are prepared during this one (double-buffered), a chunk
// per lane group. VectorE's dS (two passes over a PSUM operand) and the adds are the busiest
// stream on Trn2/Trn3; on Trn1, where ScalarE and VectorE share the PSUM port, ScalarE reads
// dP (once) into D - dP, and VectorE's dS reads SBUF.
// RoPE backward: x' = x cos + rotate_half(x) sin is linear, so dx = dx' cos +
// rotate_half^T(dx' sin), rotate_half^T([a1, a2]) = [a2, -a1].
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/attention_eager.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

namespace {
constexpr float kNegBig = -3.0e38f;
constexpr int64_t kLanes = 4;  // (q head, query tile) chains in flight: PSUM holds no more
constexpr int64_t kAhead = 2;  // lane groups loaded ahead of the one computing
constexpr int64_t kChunk = 4;  // key tiles per k / v load and per dk / dv store

// q heads [h0, h0 + nh) of one query tile, loaded and prepared together.
struct Unit {
  int64_t q0 = 0, p = 0, h0 = 0, nh = 0, last_kt = 0;
  size_t set = 0, no = 0;
  // qn, dOn [p, nh, d]; qT, dOT [d, nh, p]; trig [p, 2, d] (cos, sin); prod [p, nh, d] fp32
  // (dout * out, later dq); stats [p, 2 * heads-per-unit] fp32: -lse per head, then D.
  kernel::Tile qn, dOn, qT, dOT, trig, prod, stats;
};

// One q head of a unit in flight.
struct Lane {
  const Unit* u = nullptr;
  int64_t j = 0, uh = 0;  // head within the unit; heads per unit
  kernel::Tile dq_ps;
  int64_t p() const { return u->p; }
  kernel::Tile qn() const { return u->qn(kernel::all, j); }
  kernel::Tile dOn() const { return u->dOn(kernel::all, j); }
  kernel::Tile qT() const { return u->qT(kernel::all, j); }
  kernel::Tile dOT() const { return u->dOT(kernel::all, j); }
  kernel::Tile neg_lse() const { return u->stats(kernel::all, {j, j + 1}); }
  kernel::Tile D() const { return u->stats(kernel::all, {uh + j, uh + j + 1}); }
};

struct Step {
  size_t gi = 0;  // lane group
  int64_t kt = 0, k0 = 0, kr = 0;
  size_t slot = 0;
  bool first = false, last = false;  // of its group
  std::vector<size_t> live;          // lanes of the group that attend to the key tile
};
}  // namespace

isa::Program attention_backward(const arch::ChipSpec& chip, const AttentionSpec& s) {
  if (s.eager) return attention_eager_backward(chip, s);
  using isa::ActFunc;
  using isa::AluOp;
  using isa::Engine;
  using kernel::all;
  using kernel::Tile;
  const int64_t parts = chip.core.sbuf.partitions;
  constexpr std::string_view kOp = "attention_backward";
  require_range(kOp, "batch", s.batch, 1, int64_t{1} << 20);
  require_range(kOp, "seq", s.seq, 1, int64_t{1} << 20);
  require_range(kOp, "head_dim", s.head_dim, 2, parts);
  require_range(kOp, "kv_heads", s.kv_heads, 1, 4096);
  require_range(kOp, "q_heads", s.q_heads, 1, 4096);
  if (s.q_heads % s.kv_heads != 0)
    throw InputError(
        std::string(kOp), "q_heads",
        fmt::format("{} q heads do not share {} kv heads evenly", s.q_heads, s.kv_heads));
  if (s.rope && s.head_dim % 2 != 0)
    throw InputError(std::string(kOp), "head_dim",
                     fmt::format("rope needs an even head_dim, not {}", s.head_dim));
  if (s.kv_cache)
    throw InputError(std::string(kOp), "kv_cache", "training attends without a KV cache");
  if (s.qk_norm)
    throw InputError(std::string(kOp), "qk_norm",
                     "a per-head q/k norm stays a norm node when training (its own backward)");
  const int64_t S = s.seq, d = s.head_dim, group = s.q_heads / s.kv_heads;
  const int64_t st = ceil_div(S, parts);                  // key (and query) tiles
  const int64_t uh = std::min(group, kLanes);             // q heads per unit
  const int64_t upg = std::max<int64_t>(1, kLanes / uh);  // units per lane group
  const int64_t wide = std::max(uh, kChunk);              // of the rotation scratch
  const num::Format dt = s.dtype, f32 = num::fp32();
  const num::Format tdt = chip.core.features.bit_exact_transpose ? dt : f32;
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const bool dp_on_act = chip.core.ports.vector_scalar_psum_conflict;

  kernel::KernelBuilder kb(chip);
  const kernel::Tensor q = kb.input("q", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor k = kb.input("k", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor v = kb.input("v", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor out = kb.input("out", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor dout = kb.input("dout", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor lse = kb.input("lse", f32, {s.batch * S, s.q_heads});
  kernel::Tensor cos, sin;
  if (s.rope) {
    cos = kb.input("cos", f32, {S, d});
    sin = kb.input("sin", f32, {S, d});
  }
  const kernel::Tensor dq = kb.output("dq", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor dk = kb.output("dk", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor dv = kb.output("dv", dt, {s.batch * S, s.kv_heads * d});

  // Resident per kv head: k^T, v^T, k twice when SBUF has room (the next head's are prepared
  // during this one), the accumulators once.
  const int64_t esz = dt.storage_bytes;
  const int64_t kv_bytes = (2 * st * parts + st * d) * esz;
  const int64_t nblk_ = 2 * kLanes, nsets_ = (kAhead + 1) * upg;
  const int64_t other_bytes =
      2 * st * d * 4 + 4 * kChunk * d * esz +
      (s.rope ? 4 * kChunk * d * 4 + 4 * wide * d * 4 + 2 * uh * d * esz : 0) +
      nsets_ * (2 * uh * d * esz + 2 * uh * parts * esz + uh * d * 4 + 2 * uh * 4 +
                (s.rope ? 2 * d * 4 : 0)) +
      4 * uh * d * esz + nblk_ * (parts * 4 + 3 * parts * esz);
  constexpr int64_t kSlack = 16 << 10;  // for placement's fragmentation
  const int nkv =
      2 * kv_bytes + other_bytes + kSlack <= chip.core.sbuf.usable_bytes_per_partition ? 2 : 1;
  const auto kT_bufs = kb.sbuf_buffers("kT", dt, {d, st * parts}, nkv);
  const auto vT_bufs = kb.sbuf_buffers("vT", dt, {d, st * parts}, nkv);
  const auto kn_bufs = kb.sbuf_buffers("k", dt, {parts, st, d}, nkv);
  const Tile dk_acc = kb.sbuf("dk_acc", f32, {parts, st, d});
  const Tile dv_acc = kb.sbuf("dv_acc", f32, {parts, st, d});
  // Chunks of k and v in (and of dk and dv out), two in flight.
  const auto kst_bufs = kb.sbuf_buffers("k_chunk", dt, {parts, kChunk, d}, 2);
  const auto vst_bufs = kb.sbuf_buffers("v_chunk", dt, {parts, kChunk, d}, 2);
  std::vector<Tile> ktr_bufs, rot_bufs;
  if (s.rope) {
    ktr_bufs = kb.sbuf_buffers("k_trig", f32, {parts, 2, kChunk, d}, 2);
    rot_bufs = kb.sbuf_buffers("rot", f32, {parts, wide, d}, 4);  // two pairs
  }
  // Units: kAhead + 1 lane groups' worth of sets.
  const int nsets = static_cast<int>(nsets_);
  const auto qn_bufs = kb.sbuf_buffers("q", dt, {parts, uh, d}, nsets);
  const auto dOn_bufs = kb.sbuf_buffers("dout", dt, {parts, uh, d}, nsets);
  const auto qT_bufs = kb.sbuf_buffers("qT", dt, {d, uh, parts}, nsets);
  const auto dOT_bufs = kb.sbuf_buffers("doutT", dt, {d, uh, parts}, nsets);
  const auto prod_bufs = kb.sbuf_buffers("dout_out", f32, {parts, uh, d}, nsets);
  const auto stat_bufs = kb.sbuf_buffers("row_stats", f32, {parts, 2 * uh}, nsets);
  std::vector<Tile> trig_bufs, qraw_bufs;
  if (s.rope) {
    trig_bufs = kb.sbuf_buffers("q_trig", f32, {parts, 2, d}, nsets);
    qraw_bufs = kb.sbuf_buffers("q_load", dt, {parts, uh, d}, 2);
  }
  const auto on_bufs = kb.sbuf_buffers("out", dt, {parts, uh, d}, 2);
  const auto dqo_bufs = kb.sbuf_buffers("dq_out", dt, {parts, uh, d}, 2);
  // Per (key tile, lane): two key tiles in flight.
  const int nblk = static_cast<int>(nblk_);
  const auto ssb_bufs = kb.sbuf_buffers("scores", f32, {parts, parts}, nblk);
  const auto p_bufs = kb.sbuf_buffers("probs", dt, {parts, parts}, nblk);
  const auto ds_bufs = kb.sbuf_buffers("dS", dt, {parts, parts}, nblk);
  const auto dsT_bufs = kb.sbuf_buffers("dST", dt, {parts, parts}, nblk);
  // PSUM: 8 x (S, dP, dS^T) + 4 x dq + 2 x (dk, dv) tiles of at most 512 bytes: 16 KiB.
  const auto s_ps = kb.psum_buffers("scores_psum", f32, {parts, parts}, nblk);
  const auto dp_ps = kb.psum_buffers("dP_psum", f32, {parts, parts}, nblk);
  const auto tp_ps = kb.psum_buffers("T_psum", tdt, {parts, parts}, nblk);
  const auto dq_ps = kb.psum_buffers("dq_psum", f32, {parts, d}, static_cast<int>(kLanes));
  const auto dk_ps = kb.psum_buffers("dk_psum", f32, {parts, d}, 2);
  const auto dv_ps = kb.psum_buffers("dv_psum", f32, {parts, d}, 2);

  // Placement gives a tile its range at its first use, by next fit: touched first, the large
  // resident tiles lie together before the small rotating ones are scattered over SBUF.
  for (const std::vector<Tile>* bufs : {&kT_bufs, &vT_bufs, &kn_bufs})
    for (const Tile& t : *bufs) kb.memset(t(all, {0, 1}), 0.0, Engine::kGpSimd);
  kb.memset(dk_acc(all, 0, {0, 1}), 0.0, Engine::kGpSimd);
  kb.memset(dv_acc(all, 0, {0, 1}), 0.0, Engine::kGpSimd);

  size_t tp_no = 0, rot_no = 0, tmp_no = 0, chunk_no = 0;
  // dstT [d, p] = src [p, d] transposed on TensorE, copied out of PSUM by ScalarE (or VectorE).
  auto transpose_into = [&](const Tile& dstT, const Tile& src, Engine e = Engine::kScalar) {
    const int64_t p = src.size(0);
    const Tile tp = tp_ps[tp_no++ % tp_ps.size()]({0, d}, {0, p});
    kb.transpose(tp, src);
    if (e == Engine::kScalar)
      kb.activation(dstT, tp, ActFunc::kCopy);
    else
      kb.tensor_copy(dstT, tp);
  };
  // The rotation scratch: a pair of [p, n, d] fp32 views.
  auto rot_pair = [&](int64_t p, int64_t n) {
    const size_t b = 2 * (rot_no++ % 2);
    return std::pair{rot_bufs[b]({0, p}, {0, n}), rot_bufs[b + 1]({0, p}, {0, n})};
  };
  // RoPE and its transpose (rows.h), on a pair of the rotation scratch.
  auto rotate = [&](const Tile& dst, const Tile& src, const Tile& c, const Tile& sn, Engine e) {
    const auto [rf, tmp] = rot_pair(src.size(0), src.size(1));
    rope_rotate(kb, dst, src, c, sn, rf, tmp, e);
  };
  auto rotate_back = [&](const Tile& dst, const Tile& g, const Tile& c, const Tile& sn, Engine e) {
    const auto [a, u] = rot_pair(g.size(0), g.size(1));
    rope_rotate_back(kb, dst, g, c, sn, a, u, e);
  };
  // Rows [row0, row0 + p + (n - 1) 128) of columns [col0, col0 + ncols) of a [rows, W] tensor
  // as [p, n, ncols]: row row0 + 128 i + r at partition r, index i (the tile layout).
  auto tiled = [&](const kernel::Tensor& t, int64_t row0, int64_t p, int64_t n, int64_t col0,
                   int64_t ncols) {
    const int64_t w = t.size(1);
    return t.pattern(row0 * w + col0, {{p, w}, {n, parts * w}, {ncols, 1}});
  };
  // Key tiles in chunks: up to kChunk whole tiles, the partial last tile alone.
  struct Chunk {
    int64_t t0, n, p;
  };
  std::vector<Chunk> chunks;
  for (int64_t t = 0; t < st;) {
    const int64_t whole = S / parts;  // whole tiles
    const int64_t n = t < whole ? std::min(kChunk, whole - t) : 1;
    chunks.push_back({t, n, std::min(parts, S - t * parts)});
    t += n;
  }

  // (sequence, kv head) pairs.
  std::vector<std::pair<int64_t, int64_t>> heads;
  for (int64_t bi = 0; bi < s.batch; ++bi)
    for (int64_t g = 0; g < s.kv_heads; ++g) heads.emplace_back(bi * S, g);
  // k and v of a kv head, one chunk (GpSimd rotates, ScalarE copies the transposes: VectorE,
  // the busiest engine, is busy with the loop).
  // Returns the chunk's transposes, to be emitted later (TensorE would wait for the loads).
  auto prep_kv = [&](size_t hi, const Chunk& ch) -> std::function<void()> {
    // Plain variables, not a structured binding: the lambdas below capture them (C++20 clang
    // before 16 refuses to capture bindings).
    const int64_t base = heads[hi].first, g = heads[hi].second;
    const Tile &kT = kT_bufs[hi % nkv], &vT = vT_bufs[hi % nkv], &kn = kn_bufs[hi % nkv];
    const size_t b = chunk_no++ % 2;
    const int64_t r0 = ch.t0 * parts;
    const Tile kc = kn({0, ch.p}, {ch.t0, ch.t0 + ch.n});
    if (s.rope) {
      const Tile raw = kst_bufs[b]({0, ch.p}, {0, ch.n});
      const Tile trig = ktr_bufs[b]({0, ch.p});
      kb.dma_copy(raw, tiled(k, base + r0, ch.p, ch.n, g * d, d));
      kb.dma_copy(trig(all, 0, {0, ch.n}), tiled(cos, r0, ch.p, ch.n, 0, d));
      kb.dma_copy(trig(all, 1, {0, ch.n}), tiled(sin, r0, ch.p, ch.n, 0, d));
      rotate(kc, raw, trig(all, 0, {0, ch.n}), trig(all, 1, {0, ch.n}), Engine::kGpSimd);
    } else {
      kb.dma_copy(kc, tiled(k, base + r0, ch.p, ch.n, g * d, d));
    }
    const Tile vc = vst_bufs[b]({0, ch.p}, {0, ch.n});
    kb.dma_copy(vc, tiled(v, base + r0, ch.p, ch.n, g * d, d));
    return [&transpose_into, kT, vT, kn, vc, ch, r0, parts] {
      for (int64_t i = 0; i < ch.n; ++i) {
        const int64_t c0 = r0 + i * parts;
        transpose_into(kT(all, {c0, c0 + ch.p}), kn({0, ch.p}, ch.t0 + i));
        transpose_into(vT(all, {c0, c0 + ch.p}), vc(all, i));
      }
    };
  };
  // dv, and dk scaled (in place) and rotated back, out by chunks.
  auto epilogue = [&](size_t hi, const Chunk& ch) {
    // Plain variables, not a structured binding: the lambdas below capture them (C++20 clang
    // before 16 refuses to capture bindings).
    const int64_t base = heads[hi].first, g = heads[hi].second;
    const size_t b = chunk_no++ % 2;
    const int64_t r0 = base + ch.t0 * parts;
    const kernel::Idx rows{0, ch.p}, tiles{ch.t0, ch.t0 + ch.n};
    const Tile vo = vst_bufs[b](rows, {0, ch.n}), ko = kst_bufs[b](rows, {0, ch.n});
    kb.activation(vo, dv_acc(rows, tiles), ActFunc::kCopy);
    kb.dma_copy(tiled(dv, r0, ch.p, ch.n, g * d, d), vo);
    if (s.rope) {
      const Tile trig = ktr_bufs[b](rows);
      kb.dma_copy(trig(all, 0, {0, ch.n}), tiled(cos, ch.t0 * parts, ch.p, ch.n, 0, d));
      kb.dma_copy(trig(all, 1, {0, ch.n}), tiled(sin, ch.t0 * parts, ch.p, ch.n, 0, d));
      const Tile gk = dk_acc(rows, tiles);
      kb.activation(gk, gk, ActFunc::kCopy, scale);
      // Alternately on VectorE and GpSimd: between heads both are free (the next head's first
      // group waits for these chunks).
      rotate_back(ko, gk, trig(all, 0, {0, ch.n}), trig(all, 1, {0, ch.n}),
                  (ch.t0 / kChunk) % 2 == 0 ? Engine::kVector : Engine::kGpSimd);
    } else {
      kb.activation(ko, dk_acc(rows, tiles), ActFunc::kCopy, scale);
    }
    kb.dma_copy(tiled(dk, r0, ch.p, ch.n, g * d, d), ko);
  };

  // The schedule around the lane groups: head 0's k and v first; then, when k and v are
  // double-buffered, the next head's chunks among this head's groups, one per group, else after
  // them; the previous head's dk and dv before this head's first group (which overwrites the
  // accumulators, tile by tile: each waits only for its own chunk).
  std::deque<std::function<std::function<void()>()>> pending;  // loads; they return the rest
  std::function<void()> late;  // the transposes of the last chunk loaded
  auto emit_one = [&] {
    if (late) {
      late();
      late = nullptr;
    }
    if (pending.empty()) return;
    late = pending.front()();
    pending.pop_front();
  };
  // A head's chunks at once: each one's transposes after the next one's loads.
  auto prep_kv_all = [&](size_t hi) {
    std::function<void()> prev;
    for (const Chunk& ch : chunks) {
      std::function<void()> t = prep_kv(hi, ch);
      if (prev) prev();
      prev = std::move(t);
    }
    prev();
  };
  prep_kv_all(0);
  int64_t unit_no = 0, blk = 0;
  for (size_t hi = 0; hi < heads.size(); ++hi) {
    // Plain variables, not a structured binding: the lambdas below capture them (C++20 clang
    // before 16 refuses to capture bindings).
    const int64_t base = heads[hi].first, g = heads[hi].second;
    const Tile &kT = kT_bufs[hi % nkv], &vT = vT_bufs[hi % nkv], &kn = kn_bufs[hi % nkv];
    if (hi > 0)
      for (const Chunk& ch : chunks) epilogue(hi - 1, ch);
    if (nkv == 2 && hi + 1 < heads.size())
      for (const Chunk& ch : chunks)
        pending.emplace_back([&prep_kv, hi, ch] { return prep_kv(hi + 1, ch); });
    {
      std::vector<bool> touched(static_cast<size_t>(st), false);  // dk_acc, dv_acc tiles

      // Units, tile-major (a lane group's causal extents alike), grouped into lane groups;
      // when causal, the groups alternate between the longest and the shortest left, so that
      // the short ones' loads and GpSimd work overlap long ones' compute.
      std::vector<Unit> units;
      for (int64_t t = 0; t < st; ++t)
        for (int64_t h0 = g * group; h0 < (g + 1) * group; h0 += uh) {
          Unit u;
          u.q0 = t * parts;
          u.p = std::min(parts, S - u.q0);
          u.h0 = h0;
          u.nh = std::min(uh, (g + 1) * group - h0);
          u.last_kt = s.causal ? t : st - 1;
          units.push_back(u);
        }
      std::vector<std::vector<Unit*>> by_tile;
      for (size_t i = 0; i < units.size(); i += static_cast<size_t>(upg)) {
        by_tile.emplace_back();
        for (size_t j = i; j < std::min(units.size(), i + static_cast<size_t>(upg)); ++j)
          by_tile.back().push_back(&units[j]);
      }
      std::vector<size_t> order;  // of by_tile
      for (size_t lo = 0, end = by_tile.size(); lo < end;) {
        if (s.causal) order.push_back(--end);
        if (lo < end) order.push_back(lo++);
      }
      std::vector<std::vector<const Unit*>> groups;
      for (const size_t o : order) {
        groups.emplace_back();
        for (Unit* u : by_tile[o]) {  // buffer sets in the order the groups run
          u->no = static_cast<size_t>(unit_no++);
          u->set = u->no % static_cast<size_t>(nsets);
          const size_t i = u->set;
          const kernel::Idx rows{0, u->p}, hs{0, u->nh};
          u->qn = qn_bufs[i](rows, hs);
          u->dOn = dOn_bufs[i](rows, hs);
          u->qT = qT_bufs[i](all, hs, {0, u->p});
          u->dOT = dOT_bufs[i](all, hs, {0, u->p});
          u->prod = prod_bufs[i](rows, hs);
          u->stats = stat_bufs[i](rows);
          if (s.rope) u->trig = trig_bufs[i](rows);
          groups.back().push_back(u);
        }
      }
      auto trig_of = [&](const Unit& u, int64_t which) {
        return u.trig(all, which).broadcast(1, u.nh);  // [p, nh, d]
      };

      // A unit's loads and GpSimd work (the loop leaves GpSimd mostly idle): q rotated, -lse,
      // dout * out.
      auto prep_load = [&](const Unit& u) {
        const kernel::Idx rows{base + u.q0, base + u.q0 + u.p};
        const kernel::Idx cols{u.h0 * d, (u.h0 + u.nh) * d};
        const size_t b = tmp_no++ % 2;
        if (s.rope) {
          const Tile raw = qraw_bufs[b]({0, u.p}, {0, u.nh});
          kb.dma_copy(raw, q(rows, cols));
          kb.dma_copy(u.trig(all, 0), cos({u.q0, u.q0 + u.p}));
          kb.dma_copy(u.trig(all, 1), sin({u.q0, u.q0 + u.p}));
          rotate(u.qn, raw, trig_of(u, 0), trig_of(u, 1), Engine::kGpSimd);
        } else {
          kb.dma_copy(u.qn, q(rows, cols));
        }
        kb.dma_copy(u.dOn, dout(rows, cols));
        const Tile o = on_bufs[b]({0, u.p}, {0, u.nh});
        kb.dma_copy(o, out(rows, cols));
        const Tile nl = u.stats(all, {0, u.nh});
        kb.dma_copy(nl, lse(rows, {u.h0, u.h0 + u.nh}));
        kb.tensor_scalar(nl, nl, {AluOp::kMult, -1.0f}, {}, Engine::kGpSimd);
        kb.tensor_tensor(u.prod, u.dOn, o, AluOp::kMult, Engine::kGpSimd);
      };
      // ... and its transposes and D, emitted late (TensorE and VectorE would wait for the
      // loads).
      auto prep_late = [&](const Unit& u) {
        for (int64_t j = 0; j < u.nh; ++j) {
          transpose_into(u.qT(all, j), u.qn(all, j));
          transpose_into(u.dOT(all, j), u.dOn(all, j));
        }
        kb.tensor_reduce(u.stats(all, {uh, uh + u.nh}), u.prod, AluOp::kAdd);
      };
      auto prep_load_group = [&](size_t gi) {
        if (gi < groups.size())
          for (const Unit* u : groups[gi]) prep_load(*u);
      };
      auto prep_late_group = [&](size_t gi) {
        if (gi < groups.size())
          for (const Unit* u : groups[gi]) prep_late(*u);
      };

      // Every group's lanes and key-tile steps, then one software pipeline over all the
      // head's steps (across group boundaries, so that no group fills and drains it alone).
      std::vector<std::vector<Lane>> glanes(groups.size());
      std::vector<Step> steps;
      for (size_t gi = 0; gi < groups.size(); ++gi) {
        std::vector<Lane>& lanes = glanes[gi];
        int64_t nkt = 0;
        for (const Unit* u : groups[gi]) {
          nkt = std::max(nkt, u->last_kt + 1);
          for (int64_t j = 0; j < u->nh; ++j) {
            Lane ln;
            ln.u = u;
            ln.j = j;
            ln.uh = uh;
            ln.dq_ps = dq_ps[lanes.size()]({0, u->p});
            lanes.push_back(ln);
          }
        }
        for (int64_t kt = 0; kt < nkt; ++kt) {
          Step sp;
          sp.gi = gi;
          sp.kt = kt;
          sp.k0 = kt * parts;
          sp.kr = std::min(parts, S - sp.k0);
          sp.slot = static_cast<size_t>(blk++ % 2);
          for (size_t li = 0; li < lanes.size(); ++li)
            if (lanes[li].u->last_kt >= kt) sp.live.push_back(li);
          sp.first = kt == 0;
          sp.last = kt + 1 == nkt;
          steps.push_back(sp);
        }
      }
      auto lane = [&](const Step& sp, size_t li) -> const Lane& { return glanes[sp.gi][li]; };
      auto at = [&](const std::vector<Tile>& bufs, const Step& sp, size_t li) {
        return bufs[sp.slot * kLanes + li]({0, lane(sp, li).p()}, {0, sp.kr});
      };
      auto atT = [&](const std::vector<Tile>& bufs, const Step& sp, size_t li) {
        return bufs[sp.slot * kLanes + li]({0, sp.kr}, {0, lane(sp, li).p()});
      };
      auto diagonal = [&](const Step& sp, size_t li) {
        return s.causal && sp.k0 + sp.kr - 1 > lane(sp, li).u->q0;
      };
      // TensorE: scores and dP.
      auto stage_a = [&](const Step& sp) {
        const kernel::Idx keys{sp.k0, sp.k0 + sp.kr};
        for (size_t li : sp.live) {
          kb.matmul(at(s_ps, sp, li), lane(sp, li).qT(), kT(all, keys));
          kb.matmul(at(dp_ps, sp, li), lane(sp, li).dOT(), vT(all, keys));
        }
      };
      // ScalarE: P (GpSimd masks a diagonal tile first); VectorE: dS. Where ScalarE and
      // VectorE share the PSUM port, ScalarE reads dP (once) into D - dP (fp32, in the
      // scores' buffer, free after the exp), so that VectorE's two passes read SBUF:
      // (D - dP) * -1 is dP - D exactly, the same dS.
      auto stage_b = [&](const Step& sp) {
        for (size_t li : sp.live) {
          if (!diagonal(sp, li)) continue;
          // Keep key k0 + i for query q0 + row when k0 + i - q0 - row <= 0.
          const Tile sc = at(ssb_bufs, sp, li);
          kb.activation(sc, at(s_ps, sp, li), ActFunc::kCopy, scale);
          kb.affine_select(sc, sc, AluOp::kIsLe, sp.k0 - lane(sp, li).u->q0, -1, kNegBig);
        }
        for (size_t li : sp.live) {
          const Lane& ln = lane(sp, li);
          if (diagonal(sp, li))
            kb.activation(at(p_bufs, sp, li), at(ssb_bufs, sp, li), ActFunc::kExp, 1.0f,
                          ln.neg_lse());
          else
            kb.activation(at(p_bufs, sp, li), at(s_ps, sp, li), ActFunc::kExp, scale, ln.neg_lse());
          if (dp_on_act)
            kb.activation(at(ssb_bufs, sp, li), at(dp_ps, sp, li), ActFunc::kCopy, -1.0f, ln.D());
        }
        for (size_t li : sp.live) {
          if (dp_on_act)
            kb.scalar_tensor_tensor(at(ds_bufs, sp, li), at(ssb_bufs, sp, li),
                                    {AluOp::kMult, -1.0f}, AluOp::kMult, at(p_bufs, sp, li));
          else
            kb.scalar_tensor_tensor(at(ds_bufs, sp, li), at(dp_ps, sp, li),
                                    {AluOp::kSubtract, lane(sp, li).D()}, AluOp::kMult,
                                    at(p_bufs, sp, li));
        }
      };
      // TensorE: dS^T, and the lanes' dv and dk of the key tile summed in PSUM.
      auto stage_c = [&](const Step& sp) {
        for (size_t li : sp.live) kb.transpose(atT(tp_ps, sp, li), at(ds_bufs, sp, li));
        const Tile dvp = dv_ps[sp.slot]({0, sp.kr}), dkp = dk_ps[sp.slot]({0, sp.kr});
        for (size_t li : sp.live) {
          const bool first = li == sp.live.front();
          kb.matmul(dvp, at(p_bufs, sp, li), lane(sp, li).dOn(), {.start = first});
          kb.matmul(dkp, at(ds_bufs, sp, li), lane(sp, li).qn(), {.start = first});
        }
      };
      // ScalarE: dS^T out of PSUM.
      auto stage_d = [&](const Step& sp) {
        for (size_t li : sp.live)
          kb.activation(atT(dsT_bufs, sp, li), atT(tp_ps, sp, li), ActFunc::kCopy);
      };
      // VectorE: the accumulators (the first visit of a tile copies).
      auto stage_acc = [&](const Step& sp) {
        const Tile dka = dk_acc({0, sp.kr}, sp.kt), dva = dv_acc({0, sp.kr}, sp.kt);
        const Tile dkp = dk_ps[sp.slot]({0, sp.kr}), dvp = dv_ps[sp.slot]({0, sp.kr});
        if (touched[static_cast<size_t>(sp.kt)]) {
          kb.tensor_tensor(dka, dka, dkp, AluOp::kAdd);
          kb.tensor_tensor(dva, dva, dvp, AluOp::kAdd);
        } else {
          kb.tensor_copy(dka, dkp);
          kb.tensor_copy(dva, dvp);
          touched[static_cast<size_t>(sp.kt)] = true;
        }
      };
      // dq out: scaled out of PSUM by ScalarE, rotated back by GpSimd, one store per unit.
      auto finish = [&](size_t gi) {
        size_t li = 0;
        for (const Unit* u : groups[gi]) {
          const Tile ob = dqo_bufs[tmp_no++ % 2]({0, u->p}, {0, u->nh});
          for (int64_t j = 0; j < u->nh; ++j, ++li)
            kb.activation(s.rope ? u->prod(all, j) : ob(all, j), glanes[gi][li].dq_ps,
                          ActFunc::kCopy, scale);
          if (s.rope) rotate_back(ob, u->prod, trig_of(*u, 0), trig_of(*u, 1), Engine::kGpSimd);
          kb.dma_copy(dq({base + u->q0, base + u->q0 + u->p}, {u->h0 * d, (u->h0 + u->nh) * d}),
                      ob);
        }
      };
      // TensorE: dq += dS k, a key tile behind (ScalarE's dS^T copies are then long done).
      // After a group's last: its dq out, then the loads of the group kAhead + 1 on, into its
      // buffer set, and one pending k / v chunk.
      auto stage_e = [&](const Step& sp) {
        for (size_t li : sp.live)
          kb.matmul(lane(sp, li).dq_ps, atT(dsT_bufs, sp, li), kn({0, sp.kr}, sp.kt),
                    {.start = sp.first});
        if (!sp.last) return;
        finish(sp.gi);
        prep_load_group(sp.gi + kAhead + 1);
        emit_one();
      };
      for (size_t a = 0; a <= static_cast<size_t>(kAhead); ++a) prep_load_group(a);
      prep_late_group(0);
      const size_t n = steps.size();
      stage_a(steps[0]);
      if (steps[0].last) prep_late_group(1);
      stage_b(steps[0]);
      for (size_t i = 0; i < n; ++i) {
        if (i + 1 < n) {
          stage_a(steps[i + 1]);
          // The next group's transposes, before the TensorE work that needs them.
          if (steps[i + 1].last) prep_late_group(steps[i + 1].gi + 1);
        }
        stage_c(steps[i]);
        if (i + 1 < n) stage_b(steps[i + 1]);
        stage_d(steps[i]);
        stage_acc(steps[i]);
        if (i > 0) stage_e(steps[i - 1]);
      }
      stage_e(steps[n - 1]);
    }
    while (!pending.empty() || late) emit_one();
    if (nkv == 1 && hi + 1 < heads.size()) prep_kv_all(hi + 1);
  }
  for (const Chunk& ch : chunks) epilogue(heads.size() - 1, ch);
  return kb.build();
}

}  // namespace trnsim::ops
