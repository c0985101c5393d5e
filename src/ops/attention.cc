// Flash attention forward over token-major q, k, v (ops.h AttentionSpec), per sequence and kv
// head:
//   every 128-token tile of k is loaded, RMS-normalised per head (qk_norm) and rotated (rope)
//   in fp32, rounded to the dtype and transposed on TensorE into k^T [d, S]; v is loaded as
//   [128, S/128, d]; both stay in SBUF while each q head of the group runs;
//   per q head, three 128-query tiles at a time (a group; q prepared as k, but on GpSimd and
//   ScalarE, and the next group's while this one runs), an online softmax over key blocks of
//   512 (as examples/kernels/attention.cc): scores on TensorE; on a block of the diagonal,
//   scaled out of PSUM by ScalarE and masked by GpSimd affine_select, else read in PSUM by
//   the max (VectorE) and the exp (ScalarE, the scale folded in); running max and sum on
//   VectorE, exp with the add-reduction on ScalarE, probabilities transposed on TensorE in
//   128-key pieces and multiplied by v, accumulated with the rescale on VectorE; out = o / l.
// The schedule is what makes it fast: engines run their streams in order, so each step is
// emitted for all three tiles before the next step (independent chains alternate on every
// engine), block n + 1's scores and softmax before block n's transposes and PV matmuls, and a
// piece's PV matmuls after the next piece's transposes. (On trn2, 8 q heads over 4096 causal
// positions with RoPE: 4.60 ms before this schedule, 2.91 ms with it; VectorE is then busy
// 45 % of the time and TensorE 26 %.)
// Key blocks wholly above the diagonal are skipped when causal. -3e38 stands for -inf, so the
// exp of a masked score is exactly 0. With save_lse (training), each query row's log-sum-exp
// m + ln(l) is also stored, from the running max and sum the softmax ends with, for the
// backward (attention_backward.cc) to recompute the probabilities from.
// With a quantized cache (cache_dtype, vLLM Neuron's FP8 KV cache) the cached keys and values
// are loaded as they are, one byte an element, and multiplied in 8 bits beside the bf16 queries
// and probabilities; the keys are cached transposed (NxD Inference's k_cache_transposed: DMA
// transposes take only 2- and 4-byte elements, and a TensorE transpose of every cached tile
// each step would cost more than the bytes saved). The new tokens' k and v are quantized
// (x * scale, clamped, rounded) before they are stored and attended to; the reciprocal
// scales fold into the softmax scale and the final 1 / l.
// RoPE (rotate-half, Hugging Face Llama): x' = x * cos + rotate_half(x) * sin, rotate_half(x)
// = [-x2, x1] for the halves x1, x2 of a head; cos, sin [S, d] give each position's angles.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/attention_eager.h"
#include "ops/ops.h"
#include "ops/rows.h"

namespace trnsim::ops {

namespace {
constexpr float kNegBig = -3.0e38f;
constexpr int64_t kLanes = 3;  // query tiles whose softmax chains interleave
// Bytes per partition the RoPE angles of all positions may take to stay in SBUF.
constexpr int64_t kTrigBudget = 32 * 1024;
// 128-position tiles of cached keys (and of values) loaded by one DMA: one key block of 512
// (three buffers; bf16 d = 128: 1 KiB a partition each).
constexpr int64_t kCacheChunk = 4;

// One query tile in flight: its rows, buffers and running statistics (columns of `cols`:
// 0 m, 1 -m', 2 m', 3 block max, 4 row sum, 5 alpha of even blocks, 6 l, 7 1/l, 8 alpha of
// odd blocks).
struct Lane {
  int64_t q0 = 0, p = 0;
  int64_t koff = 0;  // split decode: the first key of its share (else 0)
  size_t buf = 0;    // its q, accumulator and statistics buffers
  kernel::Tile qT, o_acc, cols;
  kernel::View q_rows, out_rows;  // its rows of q and out in HBM
  kernel::Tile col(int64_t c) const { return cols(kernel::all, {c, c + 1}); }
};
}  // namespace

void emit_attention(kernel::KernelBuilder& kb, const arch::ChipSpec& chip, const AttentionSpec& s) {
  if (s.eager) return emit_attention_eager(kb, chip, s);
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
  // L keys per sequence; the queries are positions off .. L - 1.
  const int64_t L = s.kv_cache ? std::max(s.kv_seq, S) : S, off = L - S;
  if (s.kv_cache) require_range("attention", "kv_seq", s.kv_seq, S, int64_t{1} << 20);
  if (s.kv_cache && s.save_lse)
    throw InputError("attention", "save_lse",
                     "save_lse is for training, which has no KV cache; not both");
  const int64_t st = ceil_div(L, parts);
  const int64_t bk = std::min<int64_t>(512, st * parts);  // keys per block: one PSUM bank
  const num::Format dt = s.dtype;
  const num::Format tdt = chip.core.features.bit_exact_transpose ? dt : num::fp32();
  // A quantized cache (AttentionSpec::cache_dtype): its keys and values stay 8-bit in SBUF
  // (TensorE takes them beside bf16), so a decode step reads one byte a cached element.
  const num::Format cdt = s.cache_dtype.value_or(dt);
  const bool quant = cdt != dt;
  if (s.cache_dtype && !s.kv_cache)
    throw InputError("attention", "cache_dtype", "a cache format needs a KV cache (kv_cache)");
  if (quant && (cdt.kind != num::Kind::kFloat || cdt.storage_bytes != 1))
    throw InputError("attention", "cache_dtype",
                     fmt::format("{}: a quantized KV cache holds an 8-bit float format "
                                 "(fp8_e4m3, fp8_e4m3fn, fp8_e5m2)",
                                 cdt.name()));
  for (const auto& [key, v] : {std::pair{"k_scale", s.k_scale}, std::pair{"v_scale", s.v_scale}})
    if (quant && !(std::isfinite(v) && v > 0))
      throw InputError("attention", key, fmt::format("{} is not a positive finite scale", v));
  // Keys in the scaled domain: 1 / k_scale joins 1 / sqrt(d).
  const float scale =
      static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)) / (quant ? s.k_scale : 1.0));
  const float cmax = quant ? static_cast<float>(cdt.max_finite()) : 0.0f;

  const kernel::Tensor q = kb.input("q", dt, {s.batch * S, s.q_heads * d});
  const kernel::Tensor k = kb.input("k", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor v = kb.input("v", dt, {s.batch * S, s.kv_heads * d});
  const kernel::Tensor out = kb.output("out", dt, {s.batch * S, s.q_heads * d});
  kernel::Tensor cos, sin;
  kernel::Tensor k_cache, v_cache, lse;
  if (s.save_lse) lse = kb.output("lse", num::fp32(), {s.batch * S, s.q_heads});
  if (s.kv_cache) {
    // A quantized cache keeps its keys transposed (NxD Inference's k_cache_transposed): row
    // (b, g, i) holds dimension i of kv head g's keys at every position, so a step reads k^T
    // straight into SBUF (8-bit elements have no DMA transpose) and writes a token's column.
    k_cache = quant ? kb.inout("k_cache", cdt, {s.batch * s.kv_heads * d, L})
                    : kb.inout("k_cache", cdt, {s.batch * L, s.kv_heads * d});
    v_cache = kb.inout("v_cache", cdt, {s.batch * L, s.kv_heads * d});
  }
  if (s.rope) {  // the angles of every position up to L
    cos = kb.input("cos", num::fp32(), {L, d});
    sin = kb.input("sin", num::fp32(), {L, d});
  }
  NormParams qn, kn;
  if (s.qk_norm) {
    qn = load_norm_params(kb, Norm::kRms, "q_", d);
    kn = load_norm_params(kb, Norm::kRms, "k_", d);
  }

  // (8-bit with a quantized cache: TensorE takes them beside bf16 queries.)
  const auto kT_bufs = kb.sbuf_buffers("kT", cdt, {d, st * parts}, 2);
  const auto v_bufs = kb.sbuf_buffers("v", cdt, {parts, st, d}, 2);
  const auto ld_bufs = kb.sbuf_buffers("load", dt, {parts, d}, 2);
  const auto rf_bufs = kb.sbuf_buffers("rot", num::fp32(), {parts, d}, 2);
  const auto nf_bufs = kb.sbuf_buffers("normed", num::fp32(), {parts, d}, 2);
  const auto tr_bufs = kb.sbuf_buffers("trig", num::fp32(), {parts, 2, d}, 2);
  const auto tmp_bufs =
      kb.sbuf_buffers("rot_tmp", num::fp32(), {parts, std::max<int64_t>(half, 1)}, 2);
  const auto xb_bufs = kb.sbuf_buffers("prepped", dt, {parts, d}, 2);
  // Cached keys, already prepared, need only their transpose: from NC-v3 on the DMA makes it
  // on the way in (2- and 4-byte elements, HBM to SBUF at 90 % of a copy's rate, HARDWARE.md
  // s4) instead of a TensorE transpose and a PSUM copy per 128 positions. The staging buffers
  // of the TensorE way only where it is taken.
  // (An 8-bit cache is not: DMA transposes take 2- and 4-byte elements.)
  const bool dma_t = chip.core.dma.transpose && (cdt.storage_bytes == 2 || cdt.storage_bytes == 4);
  const auto kc_bufs = s.kv_cache && !dma_t && !quant
                           ? kb.sbuf_buffers("k_cached", cdt, {parts, kCacheChunk, d}, 3)
                           : std::vector<Tile>{};
  // Quantizing the new tokens' keys and values: the 8-bit rows, the rows as loaded (values),
  // and x * scale clamped above in fp32 (rounded once, by the clamp below into the format).
  const auto kq_bufs = quant ? kb.sbuf_buffers("k_quant", cdt, {parts, d}, 2) : std::vector<Tile>{};
  const auto vl_bufs = quant ? kb.sbuf_buffers("v_load", dt, {parts, d}, 2) : std::vector<Tile>{};
  const auto vq_bufs = quant ? kb.sbuf_buffers("v_quant", cdt, {parts, d}, 2) : std::vector<Tile>{};
  const auto qt_bufs =
      quant ? kb.sbuf_buffers("quant_tmp", num::fp32(), {parts, d}, 2) : std::vector<Tile>{};
  int64_t quant_no = 0;
  auto quantize = [&](const Tile& dst, const Tile& src, double qscale) {
    const Tile t = qt_bufs[static_cast<size_t>(quant_no++ % 2)]({0, src.partitions()});
    kb.tensor_scalar(t, src, {AluOp::kMult, static_cast<float>(qscale)}, {AluOp::kMin, cmax});
    kb.tensor_scalar(dst, t, {AluOp::kMax, -cmax});
  };
  int64_t kchunk_no = 0;
  // One decode token per sequence (and a cache): a kv head's q heads are stacked as the rows
  // of one query tile, as decode kernels do (GQA), instead of one 1-row tile per head. Every
  // row is at position off, which sees every key, so no mask is needed.
  const bool stacked = s.kv_cache && S == 1 && group > 1 && group <= parts;
  // Flash decoding: a stacked decode token's keys split into equal shares of whole key blocks,
  // one lane each, so that their online-softmax chains interleave as query tiles' do (one
  // chain walking every block leaves each engine waiting on the others); the shares' maxima,
  // sums and outputs are merged at the end (m = max m_i, l = sum e^(m_i - m) l_i, the same
  // for o).
  const int64_t key_blocks = L % bk == 0 ? L / bk : 0;
  const int64_t nsplit = !stacked                                           ? 1
                         : key_blocks >= kLanes && key_blocks % kLanes == 0 ? kLanes
                         : key_blocks >= 2 && key_blocks % 2 == 0           ? 2
                                                                            : 1;
  std::vector<NormScratch> scratch;
  if (s.qk_norm)
    for (int i = 0; i < 2; ++i)
      scratch.push_back(norm_scratch(kb, fmt::format("qknorm{}", i), d, Norm::kRms));
  const auto tp_bufs = kb.psum_buffers("T_psum", tdt, {parts, parts}, 2 * kLanes);
  // 8-bit keys transpose through the identity matmul into fp32: a bit-exact transpose would
  // leave FP8 codes in 16-bit slots (AG3), not bf16 values.
  const auto tq_bufs = quant && tdt != num::fp32()
                           ? kb.psum_buffers("T8_psum", num::fp32(), {parts, parts}, 2)
                           : std::vector<Tile>{};
  const auto q_bufs = kb.sbuf_buffers("qT", dt, {d, parts}, 2 * kLanes);
  // Scores stay in PSUM until their exp has read them; one bank more than the lanes lets the
  // next block's scores start while this block's are read (more do not fit PSUM beside the
  // transposes and PV accumulators, with fp32 transposes on trn1).
  const auto s_psum = kb.psum_buffers("scores_psum", num::fp32(), {parts, bk}, kLanes + 1);
  const auto s_bufs = kb.sbuf_buffers("scores", num::fp32(), {parts, bk}, 2 * kLanes);
  const auto p_bufs = kb.sbuf_buffers("probs", dt, {parts, bk}, 2 * kLanes);
  const auto pT_bufs = kb.sbuf_buffers("probsT", dt, {parts, parts}, 2 * kLanes);
  const auto o_psum = kb.psum_buffers("pv_psum", num::fp32(), {parts, d}, 2 * kLanes);
  const auto o_bufs = kb.sbuf_buffers("o_acc", num::fp32(), {parts, d}, 2 * kLanes);
  const auto ob_bufs = kb.sbuf_buffers("o_out", dt, {parts, d}, 2 * kLanes);
  const auto col_bufs = kb.sbuf_buffers("row_stats", num::fp32(), {parts, 9}, 2 * kLanes);

  int64_t prep_no = 0, tp_no = 0;
  // The PSUM tile a transpose of `src` writes.
  auto transpose_psum = [&](const Tile& src) -> Tile {
    const size_t i = static_cast<size_t>(tp_no++ % 2);
    return src.dtype() == cdt && !tq_bufs.empty() ? tq_bufs[i] : tp_bufs[i];
  };
  // Loads `src` ([p, d] rows of one head: positions pos0.., or all at pos0 when `one_pos`),
  // prepares them and writes their transpose to dstT [d, p].
  // `store`, when valid, receives the prepared rows (the new keys into the cache); `ready`
  // rows (a cache's) are only loaded and transposed.
  // Without a cache offset every tile of positions starts at a multiple of 128, so the RoPE
  // angles of all positions can stay in SBUF for the whole kernel (the q heads of a group and
  // every batch reuse them) when they fit a budget; otherwise each preparation loads its own.
  const bool resident_trig =
      s.rope && off == 0 && st * 2 * d * static_cast<int64_t>(sizeof(float)) <= kTrigBudget;
  Tile trig_all;
  if (resident_trig) {
    trig_all = kb.sbuf("trig_all", num::fp32(), {parts, st, 2, d});
    for (int64_t t = 0; t < st; ++t) {
      const int64_t r0 = t * parts, r1 = std::min(L, r0 + parts);
      kb.dma_copy(trig_all({0, r1 - r0}, t, 0, all), cos({r0, r1}));
      kb.dma_copy(trig_all({0, r1 - r0}, t, 1, all), sin({r0, r1}));
    }
  }
  // One decode token per sequence: every sequence's new key and queries are at position off
  // (a static batch), so that position's angles are loaded once, into as many rows as a
  // stacked query tile has.
  Tile trig_tok;
  if (s.rope && S == 1 && !resident_trig) {
    const int64_t rows = stacked ? group : 1;
    trig_tok = kb.sbuf("trig_tok", num::fp32(), {rows, 2, d});
    kb.dma_copy(trig_tok(all, 0), cos(off, all).broadcast(0, rows));
    kb.dma_copy(trig_tok(all, 1), sin(off, all).broadcast(0, rows));
  }
  // `ew`: the engine of the elementwise steps (RoPE, the cast); `evac`: of the copy out of
  // PSUM. The q tiles are prepared while a group's softmax runs on VectorE: their steps go to
  // GpSimd and ScalarE instead.
  auto prepare_T = [&](const Tile& dstT, const kernel::View& src, int64_t pos0, int64_t p,
                       const NormParams& np, const kernel::View& store = {}, bool ready = false,
                       isa::Engine ew = isa::Engine::kVector,
                       isa::Engine evac = isa::Engine::kVector, bool one_pos = false) {
    auto evacuate = [&](const Tile& dst, const Tile& src_psum) {
      if (evac == isa::Engine::kScalar)
        kb.activation(dst, src_psum, ActFunc::kCopy);
      else
        kb.tensor_copy(dst, src_psum, evac);
    };
    if (ready && dma_t) {  // a cache's keys: transposed on their way in
      kb.dma_transpose(dstT, src);
      return;
    }
    const size_t b = static_cast<size_t>(prep_no++ % 2);
    const Tile ld = ld_bufs[b]({0, p});
    kb.dma_copy(ld, src);
    Tile cur = ld;
    if (ready) {
      const Tile tp = transpose_psum(cur);
      kb.transpose(tp({0, d}, {0, p}), cur);
      evacuate(dstT, tp({0, d}, {0, p}));
      return;
    }
    if (s.qk_norm) {
      cur = nf_bufs[b]({0, p});
      normalize_rows(kb, Norm::kRms, s.eps, cur, ld, np, scratch[b], p);
    }
    if (s.rope) {
      Tile trig;
      if (resident_trig && !one_pos) {
        trig = trig_all({0, p}, pos0 / parts, all, all);
      } else if (trig_tok.valid() && pos0 == off && p <= trig_tok.partitions()) {
        trig = trig_tok({0, p});
      } else if (one_pos) {  // one position's angles read into every row
        trig = tr_bufs[b]({0, p});
        kb.dma_copy(trig(all, 0), cos(pos0, all).broadcast(0, p));
        kb.dma_copy(trig(all, 1), sin(pos0, all).broadcast(0, p));
      } else {
        trig = tr_bufs[b]({0, p});
        kb.dma_copy(trig(all, 0), cos({pos0, pos0 + p}));
        kb.dma_copy(trig(all, 1), sin({pos0, pos0 + p}));
      }
      const Tile rf = rf_bufs[b]({0, p}), tmp = tmp_bufs[b]({0, p});
      const Tile c = trig(all, 0), sn = trig(all, 1);
      kb.tensor_tensor(rf, cur, c, AluOp::kMult, ew);
      kb.tensor_tensor(tmp, cur(all, {half, d}), sn(all, {0, half}), AluOp::kMult, ew);
      kb.tensor_tensor(rf(all, {0, half}), rf(all, {0, half}), tmp, AluOp::kSubtract, ew);
      kb.tensor_tensor(tmp, cur(all, {0, half}), sn(all, {half, d}), AluOp::kMult, ew);
      kb.tensor_tensor(rf(all, {half, d}), rf(all, {half, d}), tmp, AluOp::kAdd, ew);
      cur = rf;
    }
    if (cur.dtype() != dt) {  // rounded once, to what TensorE multiplies
      const Tile xb = xb_bufs[b]({0, p});
      kb.tensor_copy(xb, cur, ew);
      cur = xb;
    }
    if (store.valid() && quant) {  // attended as the cache will hold it
      const Tile kq = kq_bufs[b]({0, p});
      quantize(kq, cur, s.k_scale);
      cur = kq;
    }
    if (store.valid() && !quant) kb.dma_copy(store, cur);
    const Tile tp = transpose_psum(cur);
    kb.transpose(tp({0, d}, {0, p}), cur);
    evacuate(dstT, tp({0, d}, {0, p}));
    if (store.valid() && quant) kb.dma_copy(store, dstT);  // the keys' columns, transposed
  };

  int64_t head_no = 0, qtile_no = 0, step = 0, sub = 0;
  for (int64_t bi = 0; bi < s.batch; ++bi) {
    const int64_t base = bi * S, cbase = bi * L;
    for (int64_t g = 0; g < s.kv_heads; ++g, ++head_no) {
      const Tile& kT = kT_bufs[static_cast<size_t>(head_no % 2)];
      const Tile& vs = v_bufs[static_cast<size_t>(head_no % 2)];
      const kernel::Idx cols{g * d, g * d + d};
      // The cache's whole 128-position tiles in chunks (one key block of 512): k in one DMA,
      // transposed by it (dma_t) or a tile at a time on TensorE, and v in one DMA (position r at
      // tile r / 128, partition r % 128, where the PV matmuls read it). A decode step's cost is
      // then the cache's bytes, not one DMA trigger (~600 ns from NC-v3 on) per 128 positions of k
      // and of v.
      const int64_t cached_tiles = off / parts, row = s.kv_heads * d;
      const int64_t kbase = (bi * s.kv_heads + g) * d;  // its rows of a transposed cache
      if (cached_tiles > 0) {
        for (int64_t c0 = 0; c0 < cached_tiles; c0 += kCacheChunk) {
          const int64_t n = std::min(kCacheChunk, cached_tiles - c0);
          if (quant) {  // already transposed: d rows of the chunk's positions
            kb.dma_copy(kT(all, {c0 * parts, (c0 + n) * parts}),
                        k_cache({kbase, kbase + d}, {c0 * parts, (c0 + n) * parts}));
          } else if (dma_t) {
            kb.dma_transpose(kT(all, {c0 * parts, (c0 + n) * parts}),
                             k_cache({cbase + c0 * parts, cbase + (c0 + n) * parts}, cols));
          } else {
            const Tile kc =
                kc_bufs[static_cast<size_t>(kchunk_no++ % kc_bufs.size())](all, {0, n}, all);
            kb.dma_copy(kc, k_cache.pattern(((cbase + c0 * parts) * s.kv_heads + g) * d,
                                            {{parts, row}, {n, parts * row}, {d, 1}}));
            for (int64_t t = 0; t < n; ++t) {
              const Tile tp = transpose_psum(kc);
              const int64_t r0 = (c0 + t) * parts;
              kb.transpose(tp({0, d}, {0, parts}), kc(all, t, all));
              kb.tensor_copy(kT(all, {r0, r0 + parts}), tp({0, d}, {0, parts}));
            }
          }
          // The chunk's v after its k: the scores need k first, and a queue moves its
          // transfers in order.
          kb.dma_copy(vs(all, {c0, c0 + n}, all),
                      v_cache.pattern(((cbase + c0 * parts) * s.kv_heads + g) * d,
                                      {{parts, row}, {n, parts * row}, {d, 1}}));
        }
      }
      // The rest in pieces of at most 128 positions: the cache's last partial tile as it is;
      // the new positions prepared (and, with a cache, written into it). A piece stays inside
      // one 128-position tile of v and on one side of `off`.
      for (int64_t r0 = cached_tiles * parts; r0 < L;) {
        const int64_t r1 = std::min({L, (r0 / parts + 1) * parts, r0 < off ? off : L});
        const int64_t p = r1 - r0, t = r0 / parts, a = r0 % parts;
        const Tile kdst = kT(all, {r0, r1});
        const Tile vdst = vs({a, a + p}, t, all);
        if (r0 < off) {
          if (quant)
            kb.dma_copy(kdst, k_cache({kbase, kbase + d}, {r0, r1}));
          else
            prepare_T(kdst, k_cache({cbase + r0, cbase + r1}, cols), r0, p, kn, {}, true);
          kb.dma_copy(vdst, v_cache({cbase + r0, cbase + r1}, cols));
        } else {
          const kernel::View kstore = !s.kv_cache ? kernel::View{}
                                      : quant     ? k_cache({kbase, kbase + d}, {r0, r1})
                                                  : k_cache({cbase + r0, cbase + r1}, cols);
          prepare_T(kdst, k({base + r0 - off, base + r1 - off}, cols), r0, p, kn, kstore);
          if (quant) {
            // Quantized from partition 0 (the engines' start-partition rule), then moved to
            // the rows of v where the PV matmuls read them, and stored.
            const size_t qb = static_cast<size_t>(quant_no % 2);
            const Tile vl = vl_bufs[qb]({0, p}), vq = vq_bufs[qb]({0, p});
            kb.dma_copy(vl, v({base + r0 - off, base + r1 - off}, cols));
            quantize(vq, vl, s.v_scale);
            kb.dma_copy(vdst, vq);
            kb.dma_copy(v_cache({cbase + r0, cbase + r1}, cols), vq);
          } else {
            kb.dma_copy(vdst, v({base + r0 - off, base + r1 - off}, cols));
            if (s.kv_cache) kb.dma_copy(v_cache({cbase + r0, cbase + r1}, cols), vdst);
          }
        }
        r0 = r1;
      }
      // Groups of up to kLanes query tiles of one q head, their steps emitted phase by phase,
      // so that each engine's stream alternates between independent online-softmax chains.
      // Stacked (one decode token): the group's q heads are the rows of one query tile.
      std::vector<std::pair<int64_t, int64_t>> groups;  // (q head, first query)
      if (stacked)
        groups.emplace_back(g * group, 0);
      else
        for (int64_t hq = g * group; hq < (g + 1) * group; ++hq)
          for (int64_t g0 = 0; g0 < S; g0 += parts * kLanes) groups.emplace_back(hq, g0);
      // A group's query tiles loaded, prepared and transposed, its statistics reset.
      // A lane's accumulator and statistics in its buffers, reset.
      auto reset = [&](Lane& ln) {
        ln.o_acc = o_bufs[ln.buf]({0, ln.p});
        ln.cols = col_bufs[ln.buf]({0, ln.p});
        kb.memset(ln.col(0), kNegBig, isa::Engine::kGpSimd);
        kb.memset(ln.col(6), 0.0, isa::Engine::kGpSimd);
        kb.memset(ln.o_acc, 0.0, isa::Engine::kGpSimd);
      };
      auto open_group = [&](int64_t hq, int64_t g0) {
        std::vector<Lane> lanes;
        for (int64_t q0 = g0; q0 < std::min(S, g0 + parts * kLanes); q0 += parts, ++qtile_no) {
          Lane ln;
          ln.q0 = q0;
          ln.p = stacked ? group : std::min(parts, S - q0);
          ln.buf = static_cast<size_t>(qtile_no % (2 * kLanes));
          ln.qT = q_bufs[ln.buf](all, {0, ln.p});
          // Stacked: row r is q head hq + r of the one token (columns d apart in q and out).
          ln.q_rows = stacked ? q.pattern((base * s.q_heads + hq) * d, {{group, d}, {d, 1}})
                              : q({base + q0, base + q0 + ln.p}, {hq * d, hq * d + d});
          ln.out_rows = stacked ? out.pattern((base * s.q_heads + hq) * d, {{group, d}, {d, 1}})
                                : out({base + q0, base + q0 + ln.p}, {hq * d, hq * d + d});
          prepare_T(ln.qT, ln.q_rows, off + q0, ln.p, qn, {}, false, isa::Engine::kGpSimd,
                    isa::Engine::kScalar, stacked);
          reset(ln);
          lanes.push_back(ln);
        }
        for (int64_t i = 1; i < nsplit; ++i, ++qtile_no) {  // the other shares: the same queries
          Lane ln = lanes.front();
          ln.koff = i * (L / nsplit);
          ln.buf = static_cast<size_t>(qtile_no % (2 * kLanes));
          reset(ln);
          lanes.push_back(ln);
        }
        return lanes;
      };
      std::vector<Lane> lanes = open_group(groups.front().first, groups.front().second);
      for (size_t gi = 0; gi < groups.size(); ++gi) {
        const int64_t hq = groups[gi].first;
        std::vector<Lane> next;  // the next group's, opened while this one runs
        {
          const int64_t last_q = off + lanes.back().q0 + lanes.back().p - 1;  // a position
          // Software pipelining over the key blocks: block n + 1's scores and softmax (stage A)
          // are emitted before block n's probability transposes and PV matmuls (stage B), so
          // TensorE multiplies the next block's scores while ScalarE and VectorE finish this
          // one's softmax, instead of waiting for it. Each block keeps its own score and
          // probability buffers (`sb`) and its alpha in a column of its parity.
          struct Block {
            int64_t k0 = 0, kbn = 0, alpha = 5;
            std::vector<std::pair<Lane*, size_t>> live;  // lane, its buffers' index
          };
          auto stage_a = [&](int64_t k0, int64_t n) {
            Block b;
            b.k0 = k0;
            b.kbn = std::min(bk, L - k0);
            b.alpha = n % 2 == 0 ? 5 : 8;
            for (Lane& ln : lanes) {
              if (s.causal && k0 > off + ln.q0 + ln.p - 1) continue;
              b.live.emplace_back(&ln, static_cast<size_t>(step++ % (2 * kLanes)));
            }
            const int64_t kbn = b.kbn, alpha = b.alpha;
            auto sc = [&](const Lane& ln, size_t sb) { return s_bufs[sb]({0, ln.p}, {0, kbn}); };
            auto pr = [&](const Lane& ln, size_t sb) { return p_bufs[sb]({0, ln.p}, {0, kbn}); };
            // A block on a lane's diagonal is masked, so its scores are scaled into SBUF first
            // (GpSimd, which masks, cannot read PSUM); any other block's max and exp read the
            // raw scores in PSUM, the scale folded into them (max(scale x) = scale max(x)).
            auto masked = [&](const Lane& ln) { return s.causal && k0 + kbn - 1 > off + ln.q0; };
            auto psum = [&](const Lane& ln, size_t sb) {
              return s_psum[sb % s_psum.size()]({0, ln.p}, {0, kbn});
            };
            for (const auto& [ln, sb] : b.live) {
              kb.matmul(psum(*ln, sb), ln->qT, kT(all, {ln->koff + k0, ln->koff + k0 + kbn}));
              if (masked(*ln)) kb.activation(sc(*ln, sb), psum(*ln, sb), ActFunc::kCopy, scale);
            }
            // Keep key k0 + i for the query at position off + q0 + row when
            // k0 + i - (off + q0) - row <= 0.
            for (const auto& [ln, sb] : b.live)
              if (masked(*ln))
                kb.affine_select(sc(*ln, sb), sc(*ln, sb), AluOp::kIsLe, k0 - off - ln->q0, -1,
                                 kNegBig);
            // Each step for every lane before the next step: VectorE runs in order, and a
            // step right after its own lane's previous one waits for that one's result.
            for (const auto& [ln, sb] : b.live)
              kb.tensor_reduce(ln->col(3), masked(*ln) ? sc(*ln, sb) : psum(*ln, sb), AluOp::kMax);
            for (const auto& [ln, sb] : b.live)  // m' = max(m, block max), in scaled units
              kb.scalar_tensor_tensor(ln->col(2), ln->col(3),
                                      {AluOp::kMult, masked(*ln) ? 1.0f : scale}, AluOp::kMax,
                                      ln->col(0));
            for (const auto& [ln, sb] : b.live)
              kb.tensor_scalar(ln->col(1), ln->col(2), {AluOp::kMult, -1.0f});
            for (const auto& [ln, sb] : b.live)
              kb.activation(ln->col(alpha), ln->col(0), ActFunc::kExp, 1.0f, ln->col(1));
            for (const auto& [ln, sb] : b.live) {
              if (masked(*ln))
                kb.activation_reduce(pr(*ln, sb), ln->col(4), sc(*ln, sb), ActFunc::kExp, 1.0f,
                                     ln->col(1));
              else
                kb.activation_reduce(pr(*ln, sb), ln->col(4), psum(*ln, sb), ActFunc::kExp, scale,
                                     ln->col(1));
            }
            for (const auto& [ln, sb] : b.live) kb.tensor_copy(ln->col(0), ln->col(2));
            for (const auto& [ln, sb] : b.live)
              kb.scalar_tensor_tensor(ln->col(6), ln->col(6), {AluOp::kMult, ln->col(alpha)},
                                      AluOp::kAdd, ln->col(4));
            return b;
          };
          auto stage_b = [&](const Block& b) {
            // Phase by phase over the lanes, and each 128-key piece's PV matmuls after the
            // next piece's transposes: TensorE runs in order, so a PV matmul emitted right
            // after its own transpose would hold the following transposes behind the PSUM copy
            // between them; this way TensorE transposes piece j + 1 while piece j is copied.
            std::vector<size_t> prev_tbs;
            int64_t prev_kr = 0;
            auto pv = [&](int64_t j, int64_t kr, const std::vector<size_t>& tbs) {
              for (size_t i = 0; i < b.live.size(); ++i) {
                const Lane& ln = *b.live[i].first;
                kb.matmul(o_psum[b.live[i].second]({0, ln.p}), pT_bufs[tbs[i]]({0, kr}, {0, ln.p}),
                          vs({0, kr}, (ln.koff + b.k0) / parts + j), {.start = j == 0});
              }
            };
            for (int64_t j = 0; j * parts < b.kbn; ++j) {
              const int64_t kr = std::min(parts, b.kbn - j * parts);
              std::vector<size_t> tbs, tps;
              for (const auto& [ln, sb] : b.live) {
                tbs.push_back(static_cast<size_t>(sub++ % pT_bufs.size()));
                tps.push_back(static_cast<size_t>(tp_no++ % tp_bufs.size()));
                kb.transpose(tp_bufs[tps.back()]({0, kr}, {0, ln->p}),
                             p_bufs[sb]({0, ln->p}, {j * parts, j * parts + kr}));
              }
              for (size_t i = 0; i < b.live.size(); ++i) {
                const Lane& ln = *b.live[i].first;
                const Tile dst = pT_bufs[tbs[i]]({0, kr}, {0, ln.p});
                const Tile src = tp_bufs[tps[i]]({0, kr}, {0, ln.p});
                // The PSUM -> SBUF copies alternate between VectorE and ScalarE (VectorE
                // carries most of the softmax's steps).
                if (tbs[i] % 2 == 0)
                  kb.tensor_copy(dst, src);
                else
                  kb.activation(dst, src, ActFunc::kCopy);
              }
              if (j > 0) pv(j - 1, prev_kr, prev_tbs);
              prev_tbs = std::move(tbs);
              prev_kr = kr;
            }
            pv((b.kbn - 1) / parts, prev_kr, prev_tbs);
            for (const auto& [ln, sb] : b.live)
              kb.scalar_tensor_tensor(ln->o_acc, ln->o_acc, {AluOp::kMult, ln->col(b.alpha)},
                                      AluOp::kAdd, o_psum[sb]({0, ln->p}));
          };
          std::vector<int64_t> starts;  // the key blocks this group attends to
          for (int64_t k0 = 0; k0 < L / nsplit && !(s.causal && k0 > last_q); k0 += bk)
            starts.push_back(k0);
          // (never empty: key 0 precedes every query)
          Block ahead = stage_a(starts.front(), 0);
          // The next group's query tiles are prepared once this group's first scores are on
          // their way: their loads, RoPE and transposes fill the engines' waits here instead
          // of standing between two groups (the q buffers hold two groups).
          if (gi + 1 < groups.size())
            next = open_group(groups[gi + 1].first, groups[gi + 1].second);
          for (size_t n = 0; n < starts.size(); ++n) {
            const Block cur = std::move(ahead);
            if (n + 1 < starts.size()) ahead = stage_a(starts[n + 1], static_cast<int64_t>(n + 1));
            stage_b(cur);
          }
          if (nsplit > 1) {  // the shares merged into the first lane's
            Lane& a = lanes.front();
            kb.tensor_tensor(a.col(3), a.col(0), lanes[1].col(0), AluOp::kMax);
            for (size_t i = 2; i < lanes.size(); ++i)
              kb.tensor_tensor(a.col(3), a.col(3), lanes[i].col(0), AluOp::kMax);
            kb.tensor_scalar(a.col(1), a.col(3), {AluOp::kMult, -1.0f});
            for (Lane& ln : lanes)  // each share's weight e^(m_i - m), in its column 5
              kb.activation(ln.col(5), ln.col(0), ActFunc::kExp, 1.0f, a.col(1));
            kb.tensor_tensor(a.col(6), a.col(6), a.col(5), AluOp::kMult);
            kb.tensor_scalar(a.o_acc, a.o_acc, {AluOp::kMult, a.col(5)});
            for (size_t i = 1; i < lanes.size(); ++i) {
              kb.scalar_tensor_tensor(a.col(6), lanes[i].col(6), {AluOp::kMult, lanes[i].col(5)},
                                      AluOp::kAdd, a.col(6));
              kb.scalar_tensor_tensor(a.o_acc, lanes[i].o_acc, {AluOp::kMult, lanes[i].col(5)},
                                      AluOp::kAdd, a.o_acc);
            }
            lanes.resize(1);
          }
          for (Lane& ln : lanes) {
            kb.reciprocal(ln.col(7), ln.col(6));
            const Tile ob = ob_bufs[ln.buf]({0, ln.p});
            // Values in the scaled domain: 1 / v_scale joins 1 / l.
            kb.tensor_scalar(ob, ln.o_acc, {AluOp::kMult, ln.col(7)},
                             quant
                                 ? kernel::AluArg{AluOp::kMult, static_cast<float>(1.0 / s.v_scale)}
                                 : kernel::AluArg{});
            kb.dma_copy(ln.out_rows, ob);
            if (s.save_lse) {  // m + ln(l), in columns 3 and 4, dead once the keys are done
              kb.activation(ln.col(3), ln.col(6), ActFunc::kLog);
              kb.tensor_tensor(ln.col(4), ln.col(3), ln.col(0), AluOp::kAdd);
              kb.dma_copy(lse({base + ln.q0, base + ln.q0 + ln.p}, {hq, hq + 1}), ln.col(4));
            }
          }
        }
        lanes = std::move(next);
      }
    }
  }
}

isa::Program attention(const arch::ChipSpec& chip, const AttentionSpec& s) {
  kernel::KernelBuilder kb(chip);
  emit_attention(kb, chip, s);
  return kb.build();
}

}  // namespace trnsim::ops
