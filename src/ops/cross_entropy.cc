// The softmax cross-entropy kernel (train_ops.h CrossEntropySpec), forward and backward.
// 128 tokens per tile (tokens on the partitions), the vocabulary in column chunks of equal
// width, at most 4096 (2-byte dtypes; 2048 for fp32), each loaded twice (three rotating
// buffers per pass; chunks of a [T, V] matrix: the DMA's gathered-rows rate):
//   pass 1, per chunk: the chunk max (VectorE), the running max kept negated (-m: the bias of
//     ScalarE's exp), the chunk's sum of exp(x - m) from ScalarE's activation with its
//     add-reduction, the running sum rescaled by exp(m_old - m_new) (online softmax), and the
//     label's logit: range_select on NC-v3+ (one VectorE pass keeping the element whose column
//     equals the label, max-reduced), else the iota == label mask times x (one
//     scalar_tensor_tensor) and an add-reduction; one column per chunk, reduced once per tile.
//   then lse = m + ln(sum) and loss = (lse - logit[label]) * valid, valid = 0 <= label < V.
//   pass 2, per chunk: e = |scale| exp(x - lse) (ln|scale| folded into the exp's bias, so no
//     extra pass; the bias is -3e38 on ignored rows, whose e is then 0) on ScalarE, or with
//     NC-v4's VectorE exponential; the scaled one-hot (iota == label) * |scale| * valid on
//     whichever engine has the least work; dlogits = e - onehot (onehot - e for a negative
//     scale) on GpSimd, rounded to the dtype once and stored.
// Tile i's pass 1 runs beside tile i-1's pass 2 (issued chunk by chunk in turn), so that each
// engine has the other pass's independent work while one waits on a dependency. The kernel
// is bound by its DMA traffic (two reads and one write of the logits) where the engines keep
// up (trn1, trn2), by the engines' fp32 passes on trn3.
#include <cmath>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

namespace {
constexpr double kNegBig = -3.0e38;  // "minus infinity" that stays finite (no inf - inf)
}  // namespace

isa::Program cross_entropy(const arch::ChipSpec& chip, const CrossEntropySpec& s) {
  using isa::ActFunc;
  using isa::AluOp;
  using isa::Engine;
  using kernel::all;
  require_range("cross_entropy", "tokens", s.tokens, 1, int64_t{1} << 24);
  // Column indices and labels are compared as fp32: exact below 2^24.
  require_range("cross_entropy", "vocab", s.vocab, 1, int64_t{1} << 22);
  if (!std::isfinite(s.scale))
    throw InputError("cross_entropy", "scale", "the gradient scale must be finite");
  const int64_t parts = chip.core.sbuf.partitions, T = s.tokens, V = s.vocab;
  const int64_t max_chunk = s.dtype.storage_bytes <= 2 ? 4096 : 2048;
  const int64_t nc = ceil_div(V, max_chunk), W = ceil_div(V, nc);
  const bool range_select = chip.core.features.range_select;
  // NC-v4's VectorE exp (a quarter of a pass) takes pass 2's exp off ScalarE.
  const bool fast_exp = chip.core.features.fast_exponential;
  const num::Format f32 = num::fp32();
  const double abs_scale = std::fabs(s.scale);
  // ln|scale| in the exp's bias; a zero scale zeroes every row (as an ignored one).
  const double ln_scale = abs_scale > 0 ? std::log(abs_scale) : kNegBig;

  kernel::KernelBuilder kb(chip);
  const kernel::Tensor logits = kb.input("logits", s.dtype, {T, V});
  const kernel::Tensor labels = kb.input("labels", num::int_format(num::Dtype::kInt32), {T});
  const kernel::Tensor loss = kb.output("loss", f32, {T});
  const kernel::Tensor dlogits = kb.output("dlogits", s.dtype, {T, V});

  // Constants: column index within a chunk, each chunk's first column, a -3e38 column.
  const kernel::Tile iota = kb.sbuf("iota", f32, {parts, W});
  kb.iota(iota, 0, 0);
  const kernel::Tile offs = kb.sbuf("chunk_offsets", f32, {parts, nc});
  kb.iota(offs, 0, 0);
  kb.tensor_scalar(offs, offs, {AluOp::kMult, static_cast<double>(W)});
  const kernel::Tile neg_big = kb.sbuf("neg_big", f32, {parts, 1});
  kb.memset(neg_big, kNegBig);

  const auto x1_bufs = kb.sbuf_buffers("x_pass1", s.dtype, {parts, W}, 3);
  const auto x2_bufs = kb.sbuf_buffers("x_pass2", s.dtype, {parts, W}, 3);
  const kernel::Tile exp_junk = kb.sbuf("exp_discarded", s.dtype, {parts, W});
  const kernel::Tile pick_junk = kb.sbuf("pick_discarded", s.dtype, {parts, W});
  // The chunk max in the logits' dtype (it is one of them): VectorE reduces a 16-bit tile
  // into a 16-bit column at twice the rate.
  const auto cmax_bufs = kb.sbuf_buffers("chunk_max", s.dtype, {parts, 1}, 2);
  const auto e_bufs = kb.sbuf_buffers("softmax", f32, {parts, W}, 2);
  const auto oh_bufs = kb.sbuf_buffers("onehot", f32, {parts, W}, 2);
  const auto dl_bufs = kb.sbuf_buffers("dlogits", s.dtype, {parts, W}, 2);
  // Per-tile columns, in two sets: one tile's pass 1 runs beside the previous tile's pass 2.
  constexpr int64_t kCols = 17;
  const auto col_bufs = kb.sbuf_buffers("row_stats", f32, {parts, kCols}, 2);
  const auto lab_bufs = kb.sbuf_buffers("chunk_labels", f32, {parts, nc}, 2);
  // The label's logit per chunk: range_select's fp32 max, else a sum with one nonzero term,
  // exact in the dtype (a 16-bit reduction into a 16-bit column runs at twice the rate).
  const auto pick_bufs =
      kb.sbuf_buffers("chunk_label_logits", range_select ? f32 : s.dtype, {parts, nc}, 2);

  // One tile of rows and its [p, 1] columns.
  struct Rows {
    int64_t r0 = 0, p = 0;
    kernel::Tile lab, ok_lo, valid, sabs, cmax, lnsum, picked, bias2, shift, lp;  // cmax: dtype
    kernel::Tile nm[2], sum[2], corr[2], csum[2];  // per chunk, alternating
    kernel::Tile lab_c, picks;                     // [p, nc]: per chunk
    // The running sum after chunk c: chunk 0's own sum, then the alternating columns.
    kernel::Tile running(int64_t c) const { return c == 0 ? csum[0] : sum[c % 2]; }
  };
  auto rows_of = [&](int64_t tile) {
    Rows t;
    t.r0 = tile * parts;
    t.p = std::min(parts, T - t.r0);
    const auto b = static_cast<size_t>(tile % 2);
    const kernel::Tile st = col_bufs[b]({0, t.p});
    int64_t next = 0;
    auto col = [&] {
      ++next;
      return st(all, {next - 1, next});
    };
    for (kernel::Tile* c :
         {&t.lab, &t.ok_lo, &t.valid, &t.sabs, &t.lnsum, &t.picked, &t.bias2, &t.shift, &t.lp,
          &t.nm[0], &t.nm[1], &t.sum[0], &t.sum[1], &t.corr[0], &t.corr[1], &t.csum[0], &t.csum[1]})
      *c = col();
    t.cmax = cmax_bufs[b]({0, t.p});
    t.lab_c = lab_bufs[b]({0, t.p});
    t.picks = pick_bufs[b]({0, t.p});
    return t;
  };
  auto chunk = [&](int64_t c) { return std::pair{c * W, std::min(W, V - c * W)}; };

  // The labels as fp32 (a casting DMA), valid = 0 <= label <= V - 1, each chunk's label
  // relative to its first column, |scale| * valid.
  auto prologue = [&](const Rows& t) {
    kb.dma_copy(t.lab, labels({t.r0, t.r0 + t.p}).reshape({t.p, 1}));
    kb.tensor_scalar(t.ok_lo, t.lab, {AluOp::kIsGe, 0.0f});
    kb.scalar_tensor_tensor(t.valid, t.lab, {AluOp::kIsLe, static_cast<double>(V - 1)},
                            AluOp::kMult, t.ok_lo);
    kb.tensor_scalar(t.lab_c, offs({0, t.p}), {AluOp::kSubtract, t.lab, true});
    kb.tensor_scalar(t.sabs, t.valid, {AluOp::kMult, abs_scale});
  };
  // sum(c) = sum(c - 1) * exp(m(c - 1) - m(c)) + sum of chunk c's exp(x - m(c)). VectorE
  // issues it one chunk late, after the next chunk's max, so that it does not wait for
  // ScalarE's reduction of chunk c while it could be working on chunk c + 1.
  auto rescale = [&](const Rows& t, int64_t c) {
    if (c > 0)
      kb.scalar_tensor_tensor(t.running(c), t.running(c - 1), {AluOp::kMult, t.corr[c % 2]},
                              AluOp::kAdd, t.csum[c % 2]);
  };
  // Pass 1 of chunk c: max, online sum of exp, the label's logit.
  int64_t loads1 = 0, loads2 = 0;
  auto pass1 = [&](const Rows& t, int64_t c) {
    const auto [c0, w] = chunk(c);
    const kernel::Tile xr = x1_bufs[static_cast<size_t>(loads1++ % 3)]({0, t.p}, {0, w});
    kb.dma_copy(xr, logits({t.r0, t.r0 + t.p}, {c0, c0 + w}));
    const kernel::Tile cur = t.nm[c % 2], prev = t.nm[(c + 1) % 2];
    kb.tensor_reduce(t.cmax, xr, AluOp::kMax);
    if (c == 0)
      kb.tensor_scalar(cur, t.cmax, {AluOp::kMult, -1.0f});
    else
      kb.scalar_tensor_tensor(cur, t.cmax, {AluOp::kMult, -1.0f}, AluOp::kMin, prev);
    rescale(t, c - 1);
    if (c > 0) kb.activation(t.corr[c % 2], prev, ActFunc::kExp, -1.0f, cur);  // exp(m' - m)
    kb.activation_reduce(exp_junk({0, t.p}, {0, w}), t.csum[c % 2], xr, ActFunc::kExp, 1.0f, cur);
    const kernel::Tile pick = t.picks(all, {c, c + 1});
    if (range_select) {
      kb.range_select(pick_junk({0, t.p}, {0, w}), pick, xr, AluOp::kIsEqual, t.lab,
                      AluOp::kIsEqual, t.lab, c0, kNegBig, false);
    } else {
      // x where the column is the label, 0 elsewhere (exact in the dtype), summed.
      const kernel::Tile prod = pick_junk({0, t.p}, {0, w});
      kb.scalar_tensor_tensor(prod, iota({0, t.p}, {0, w}),
                              {AluOp::kIsEqual, t.lab_c(all, {c, c + 1})}, AluOp::kMult, xr);
      kb.tensor_reduce(pick, prod, AluOp::kAdd);
    }
  };
  // After pass 1: lse = m + ln(sum), the loss, and pass 2's exp bias.
  auto finish = [&](const Rows& t) {
    rescale(t, nc - 1);
    const kernel::Tile neg_m = t.nm[(nc - 1) % 2];
    kb.activation(t.lnsum, t.running(nc - 1), ActFunc::kLog);
    kb.tensor_reduce(t.picked, t.picks, range_select ? AluOp::kMax : AluOp::kAdd);
    // loss = (ln(sum) - (-m) - logit) * valid: an ignored row's logit is 0 or -3e38, finite.
    kb.scalar_tensor_tensor(t.lp, t.lnsum, {AluOp::kSubtract, neg_m}, AluOp::kSubtract, t.picked);
    kb.tensor_tensor(t.lp, t.lp, t.valid, AluOp::kMult);
    kb.dma_copy(loss({t.r0, t.r0 + t.p}).reshape({t.p, 1}), t.lp, {Engine::kVector});
    // ln|scale| - lse, or -3e38 on ignored rows.
    kb.tensor_scalar(t.bias2, t.lnsum, {AluOp::kSubtract, neg_m},
                     {AluOp::kSubtract, ln_scale, true});
    kb.select(t.bias2, t.valid, t.bias2, neg_big({0, t.p}));
    if (fast_exp) kb.tensor_scalar(t.shift, t.bias2, {AluOp::kMult, -1.0f});
  };
  // Pass 2's one-hot (one fp32 pass on VectorE, ScalarE or GpSimd) goes, chunk by chunk, to
  // the engine that would finish it first by a count of the work given to each so far at the
  // engines' clocks. Per chunk pair: VectorE the max (half a pass), the label pick (one pass
  // with range_select, else two and a half) and on NC-v4 pass 2's exp (a quarter); ScalarE
  // the exps (one pass each); GpSimd the subtraction (two passes, a start-up) and the store's
  // trigger (the descriptor-generation time on NC-v3+). (The subtraction stays on GpSimd: put
  // on VectorE too by the same count, the two wait on each other more than they gain.)
  double busy[3] = {0, 0, 0};  // VectorE, ScalarE, GpSimd (ns)
  const double clk[3] = {chip.core.vector.clock_ghz, chip.core.scalar.clock_ghz,
                         chip.core.gpsimd.clock_ghz};
  const double trigger_ns =
      chip.core.dma.hwdge_per_core > 0 ? chip.core.dma.dge_instruction_ns.value_or(0) : 0;
  const double pool_start = chip.core.cost.gpsimd_start_cycles / clk[2];
  auto onehot_engine = [&](int64_t w) {
    const auto n = static_cast<double>(w);
    busy[0] += ((range_select ? 1.5 : 3.0) + (fast_exp ? 0.25 : 0.0)) * n / clk[0];
    busy[1] += (fast_exp ? 1 : 2) * n / clk[1];
    busy[2] += 2 * n / clk[2] + pool_start + trigger_ns;
    double cost[3];
    for (int e = 0; e < 3; ++e) cost[e] = n / clk[e] + (e == 2 ? pool_start : 0.0);
    int best = 0;
    for (int e = 1; e < 3; ++e)
      if (busy[e] + cost[e] < busy[best] + cost[best]) best = e;
    busy[best] += cost[best];
    return best == 0 ? Engine::kVector : best == 1 ? Engine::kScalar : Engine::kGpSimd;
  };
  // Pass 2 of chunk c: dlogits = |scale| softmax - |scale| onehot (negated for a negative
  // scale), stored by GpSimd (the policy's store trigger), which computed it.
  auto pass2 = [&](const Rows& t, int64_t c) {
    const auto [c0, w] = chunk(c);
    const kernel::Tile xr = x2_bufs[static_cast<size_t>(loads2++ % 3)]({0, t.p}, {0, w});
    kb.dma_copy(xr, logits({t.r0, t.r0 + t.p}, {c0, c0 + w}));
    const auto k = static_cast<size_t>(c % 2);
    const kernel::Tile e = e_bufs[k]({0, t.p}, {0, w}), oh = oh_bufs[k]({0, t.p}, {0, w});
    const kernel::Tile dl = dl_bufs[k]({0, t.p}, {0, w});
    if (fast_exp)
      kb.exponential(e, xr, t.shift);  // exp(x - shift), shift = lse - ln|scale| or 3e38
    else
      kb.activation(e, xr, ActFunc::kExp, 1.0f, t.bias2);
    kb.tensor_scalar(oh, iota({0, t.p}, {0, w}), {AluOp::kIsEqual, t.lab_c(all, {c, c + 1})},
                     {AluOp::kMult, t.sabs}, onehot_engine(w));
    if (s.scale >= 0)
      kb.tensor_tensor(dl, e, oh, AluOp::kSubtract, Engine::kGpSimd);
    else
      kb.tensor_tensor(dl, oh, e, AluOp::kSubtract, Engine::kGpSimd);
    kb.dma_copy(dlogits({t.r0, t.r0 + t.p}, {c0, c0 + w}), dl);
  };

  // Tile i's pass 1 is issued chunk by chunk beside tile i-1's pass 2 (pass 2 first: its
  // inputs are ready, while pass 1's exp waits for VectorE's max), so that ScalarE, VectorE
  // and GpSimd each have independent work while the other pass waits on a dependency.
  const int64_t tiles = ceil_div(T, parts);
  for (int64_t i = 0; i <= tiles; ++i) {
    const bool first = i < tiles;
    const bool second = i > 0;
    Rows cur, prev;
    if (first) {
      cur = rows_of(i);
      prologue(cur);
    }
    if (second) prev = rows_of(i - 1);
    for (int64_t c = 0; c < nc; ++c) {
      if (second) pass2(prev, c);
      if (first) pass1(cur, c);
    }
    if (first) finish(cur);
  }
  return kb.build();
}

}  // namespace trnsim::ops
