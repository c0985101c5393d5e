// The norm backward kernel (train_ops.h NormGradSpec): 128 tokens per tile on the partitions,
// fp32 inside, each row in chunks of 512 columns (one fp32 PSUM bank). Per tile, three phases:
//   stats  the statistics recomputed from x as the forward computes them (RMSNorm: ScalarE
//          square sums, rsqrt; LayerNorm: VectorE bn_stats / bn_aggr); rstd.
//   A      per chunk: P = dy * x (LayerNorm: dy * (x - mean), one VectorE scalar_tensor_tensor)
//          made by VectorE from TensorE's copy of dy in PSUM (an identity matmul, exact; a PSUM
//          source halves a two-input op) or by GpSimd from SBUF; TensorE accumulates
//          dgamma += rstd^T P (LayerNorm: dbeta += 1^T dy) in PSUM over all the tiles, the
//          stationary a column of rstd at position j of a zero window, so that chunk j lands
//          in partition j of one bank; B = P * gamma over P once TensorE has read it, which
//          ScalarE sums into sum(g x) (LayerNorm: sum(g (x - mean)), and sum(g) of G = dy *
//          gamma, made as P is).
//   B      per chunk: ScalarE's rstd * dy into PSUM (or SBUF), times gamma on VectorE (GpSimd):
//          G' = rstd g, + dres; ScalarE's Y = -k x (+ c) into PSUM, k = rstd^3 sum(g x) / F
//          (LayerNorm: c = k mean - rstd mean(g)), and VectorE's dx = G' + Y (RMSNorm: or one
//          scalar_tensor_tensor x * -k + G'), rounded once, written over x's chunk; the whole
//          dx row stored.
// Which engine makes which columns of P, G', dx, B and the dres add is chosen per chip from the
// engines' cost tables and clocks, to even out their work (balance()).
// x, dy (and dres) are loaded and dx stored as whole [128, F] rows (contiguous HBM blocks).
// Every item of every phase has a slot on one timeline (a slot: one chunk of each phase) and
// the kernel emits them in slot order, so each engine's in-order stream interleaves the
// phases: tile u's A takes slots [A_u, A_u + n) (n chunks), its statistics the n slots before,
// its B the n after A's sums; each step of a chain lags the one it waits for, on another
// engine, by a slot or more. Tiles start every `period` slots: n where SBUF holds the rows of
// the tiles in flight (A of u beside B of u-1 and the statistics of u+1, loads ahead: x of ~4
// tiles, dy of ~3 (dres ~2) and gamma, ~18 bytes per feature and partition, 22 with dres: F to
// ~6000 on trn1, ~8000 on trn2, ~10000 on trn3), the shortest longer period that fits for
// wider rows (plan(): each row lives from its load to its last use), down to one tile at a
// time (gamma, x and dy: 8 bytes per feature, dres then loaded per group, as for F = 16384 on
// trn1), so that nothing spills. gamma is loaded once, broadcast to every partition; dgamma
// (dbeta) leave PSUM once, after the last tile, stored fp32.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

namespace {

using isa::AluOp;
using isa::Engine;
using kernel::all;
using kernel::Tile;

constexpr int64_t kChunk = 512;  // fp32 columns of one PSUM bank; bn_stats' 512 elements too

// dst = in0 op in1 over [p, w] tiles, columns [0, c) on VectorE and [c, w) on GpSimd.
void split_tt(kernel::KernelBuilder& kb, double share, const Tile& dst, const Tile& in0,
              const Tile& in1, AluOp op) {
  const int64_t f = dst.size(1);
  const int64_t c = std::clamp<int64_t>(std::llround(share * static_cast<double>(f)), 0, f);
  if (c > 0) kb.tensor_tensor(dst(all, {0, c}), in0(all, {0, c}), in1(all, {0, c}), op);
  if (c < f)
    kb.tensor_tensor(dst(all, {c, f}), in0(all, {c, f}), in1(all, {c, f}), op, Engine::kGpSimd);
}

class NormBackward {
 public:
  NormBackward(const arch::ChipSpec& chip, const NormGradSpec& s)
      : chip_(chip), s_(s), kb_(chip), layer_(s.norm == Norm::kLayer) {}

  isa::Program build();

 private:
  // Columns of a tile's fp32 statistics.
  enum Col : int64_t {
    kRstd,
    kNegK,  // -k = -rstd^3 sum(g x) / F
    kBias,  // LayerNorm: k mean - rstd mean(g)
    kMean,  // LayerNorm: bn_aggr's mean, variance
    kVar,
    kSumB,   // sum over the row of gamma dy x (LayerNorm: gamma dy (x - mean))
    kSumG,   // LayerNorm: sum of gamma dy
    kSumSq,  // RMSNorm: sum of x^2
    kTmp,
    kGroupCols,  // then per group: square sums, sums of B, sums of G; bn_stats 6 per chunk
  };
  struct Rows {
    int64_t r0 = 0, p = 0;
    Tile x, dy, dres, st, win;
    // Handed from one item to a later one: per chunk the PSUM tiles (dy, rstd dy, Y), per
    // group the SBUF buffers (P, LayerNorm's G, G').
    std::vector<Tile> dy_ps, sdy_ps, sdy_sb, y_ps, p_buf, g_buf, gp_buf, dres_buf;
    bool done = false;  // its store emitted
    Tile col(int64_t c) const { return st(all, {c, c + 1}); }
  };
  struct Range {
    int64_t a = 0, b = 0;
  };
  // Where a tile's items go on the timeline, relative to the start of its phase A.
  struct Offsets {
    int64_t stats_first = 0, load_x = 0, load_dy = 0, b = 0, load_dres = 0, store = 0;
    int64_t sums_lag = 0, dx_lag = 0, dres_lead = 0;
  };
  struct Span {
    int64_t from, to;
  };
  // Emission order of the items of one slot.
  enum Order : int {
    kLoad,
    kCopyDy,   // a0: TensorE dy -> PSUM
    kScaleDy,  // b0: ScalarE rstd dy -> PSUM
    kStats,
    kProducts,  // a1, a2: VectorE P (G), TensorE dgamma (dbeta)
    kGradient,  // b1: VectorE G'
    kGpsimd,    // a3, b2: B = P gamma, G' += dres
    kScaleX,    // b3: ScalarE Y
    kSums,      // a4: ScalarE sums
    kDx,        // b4: VectorE dx
    kFinish,
    kStore,
  };
  struct Item {
    int64_t slot = 0;
    int order = 0;
    int64_t seq = 0;
    std::function<void()> emit;
  };

  void plan();
  void balance();
  Offsets offsets(int64_t gs) const;
  int64_t sbuf_bytes(int64_t period, int64_t gs, bool dres_rows) const;
  std::vector<Span> spans(const Offsets& o, bool dres_rows) const;
  int64_t dres_buffers(const Offsets& o, int64_t gs) const;
  // Buffers of ScalarE's rstd dy in SBUF for GpSimd's part of G', if it has one.
  int64_t sd_buffers() const { return g_vector_ < 1.0 ? 3 : 0; }
  int64_t groups() const { return ceil_div(n_, gs_); }
  Range chunk_cols(int64_t j) const { return {j * kChunk, std::min(F_, (j + 1) * kChunk)}; }
  Range group_chunks(int64_t g) const { return {g * gs_, std::min(n_, (g + 1) * gs_)}; }
  Range group_cols(int64_t g) const {
    const Range c = group_chunks(g);
    return {c.a * kChunk, std::min(F_, c.b * kChunk)};
  }
  int64_t ss_col(int64_t g) const { return kGroupCols + g; }
  int64_t sb_col(int64_t g) const { return kGroupCols + groups() + g; }
  int64_t sg_col(int64_t g) const { return kGroupCols + 2 * groups() + g; }
  int64_t bn_col(int64_t j) const { return kGroupCols + 3 * groups() + 6 * j; }
  int64_t stat_cols() const { return kGroupCols + 3 * groups() + 6 * n_; }
  // The window [p, m] whose column r is the window tile's one (the rest zeros).
  Tile window(const Tile& w, int64_t p, int64_t r, int64_t m) const {
    return w({0, p}, {2 * n_ - r, 2 * n_ - r + m});
  }
  Tile psum_next() { return psum_[psum_i_++ % psum_.size()]; }
  // The first columns of `w` that a fraction `f` takes (whole 32s, so the PSUM parts align).
  static int64_t split(double f, int64_t w) {
    if (f >= 1.0) return w;
    return std::clamp<int64_t>(std::llround(f * static_cast<double>(w) / 32.0) * 32, 0, w);
  }
  static Tile rotate(const std::vector<Tile>& bufs, size_t& i) { return bufs[i++ % bufs.size()]; }
  void at(int64_t slot, Order order, std::function<void()> fn) {
    items_.push_back({slot, order, static_cast<int64_t>(items_.size()), std::move(fn)});
  }

  void place_tile(Rows& t, int64_t a);
  void load(Tile& dst, const kernel::Tensor& src, const Rows& t, const char* name);
  void stats_group(Rows& t, int64_t g);
  void stats_finish(Rows& t);
  void copy_dy(Rows& t, int64_t j);
  void products(Rows& t, int64_t j);
  void gpsimd_b(Rows& t, int64_t g);
  void sums(Rows& t, int64_t g);
  void a_finish(Rows& t);
  void scale_dy(Rows& t, int64_t j);
  void gradient(Rows& t, int64_t j);
  void add_dres(Rows& t, int64_t g);
  void scale_x(Rows& t, int64_t j);
  void dx(Rows& t, int64_t j);
  // The sum of `n` columns from `c0` into `dst` (or `c0` itself for one).
  Tile sum_cols(const Rows& t, int64_t c0, int64_t n, int64_t dst);
  void constants();
  void finish_outputs();

  const arch::ChipSpec& chip_;
  const NormGradSpec& s_;
  kernel::KernelBuilder kb_;
  const bool layer_;
  int64_t parts_ = 0, T_ = 0, F_ = 0, n_ = 0, nfull_ = 0, rem_ = 0;
  int64_t gs_ = 1, period_ = 1;  // chunks per group; slots between tiles
  bool dres_rows_ = true;        // dres loaded as whole rows, else per group
  // Column fractions (balance()): P / G made by VectorE from PSUM, dx from ScalarE's Y in PSUM,
  // B and the dres add on VectorE.
  double p_vector_ = 1.0, y_psum_ = 1.0, g_vector_ = 1.0, share_ = 0.0;
  double inv_f_ = 0.0;
  double slot_ns_ = 0.0, row_load_ns_ = 0.0;
  kernel::Tensor x_, dy_, gamma_in_, dres_, dx_, dgamma_, dbeta_;
  Tile gamma_, ident_, ones_win_, ones_win_dy_, junk_;
  Tile acc_, acc_part_;  // [nfull (+ nfull), 512] dgamma (dbeta); [1 (+ 1), rem]
  Tile acc_b_;           // LayerNorm's dbeta rows: acc_ itself where both fit 128 partitions
  int64_t acc_b_row_ = 0;
  std::vector<Tile> psum_, pbuf_, gbuf_, ggbuf_, stbuf_, winbuf_, rbuf_, sdbuf_;
  size_t psum_i_ = 0, pbuf_i_ = 0, gbuf_i_ = 0, ggbuf_i_ = 0, stbuf_i_ = 0, winbuf_i_ = 0;
  size_t rbuf_i_ = 0, sdbuf_i_ = 0;
  std::vector<Item> items_;
};

// Slots of one tile's items after (or before) its phase A starts, for groups of `gs` chunks:
// the statistics in the n slots before A; x loaded before them and dy before A, each ahead by
// about twice a row's transfer (other transfers share the DMA engines); B once A's sums are
// made; GpSimd's group ops and what waits on them a group later.
NormBackward::Offsets NormBackward::offsets(int64_t gs) const {
  Offsets o;
  const int64_t lead = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(2.0 * row_load_ns_ / std::max(slot_ns_, 1.0))) + 1, 2, n_ + 2);
  o.stats_first = -n_ - 1;
  o.load_x = o.stats_first - lead;
  o.load_dy = -1 - lead;
  o.sums_lag = gs + 1;
  o.b = n_ + o.sums_lag + 1;
  o.load_dres = o.b - 1 - lead;
  o.dres_lead = 2 + gs;
  o.dx_lag = 1 + (s_.residual ? gs + 1 : 0);
  o.store = o.b + n_ + o.dx_lag;
  return o;
}

// SBUF bytes per partition the kernel holds at its peak when tiles start every `period` slots,
// with groups of `gs` chunks (dres as whole rows or per group): gamma, the rows resident (each
// from its load to its last use, the most that overlap), the rotating buffers and the small
// tiles.
int64_t NormBackward::sbuf_bytes(int64_t period, int64_t gs, bool dres_rows) const {
  const Offsets o = offsets(gs);
  const int64_t row = F_ * s_.dtype.storage_bytes;
  int64_t rows = 0;
  for (const Span& sp : spans(o, dres_rows)) rows += ceil_div(sp.to - sp.from + 1, period);
  const int64_t group = gs * kChunk;
  int64_t buffers = (layer_ ? 14 : 10) * group * 4 + sd_buffers() * kChunk * 4;
  if (s_.residual && !dres_rows) buffers += dres_buffers(o, gs) * group * s_.dtype.storage_bytes;
  const int64_t live = ceil_div(o.store - o.stats_first + 1, period) + 1;
  const int64_t small = live * 4 * (kGroupCols + 9 * n_ + 4 * n_ + 1) + 2 * (4 * n_ + 1 + parts_) +
                        4 * (4 * n_ + 1) + 4 * 2 * kChunk;
  return 4 * F_ + rows * row + buffers + small;
}

// The rows' live spans, relative to phase A's first slot: x from its load to the store, dy to
// its last use in B, dres (as a row) from its load to its last add.
std::vector<NormBackward::Span> NormBackward::spans(const Offsets& o, bool dres_rows) const {
  std::vector<Span> v{{o.load_x, o.store}, {o.load_dy, o.b + n_}};
  if (s_.residual && dres_rows) v.push_back({o.load_dres, o.b + n_ + o.sums_lag});
  return v;
}

int64_t NormBackward::dres_buffers(const Offsets& o, int64_t gs) const {
  return ceil_div(o.dres_lead + 1, gs) + 2;
}

void NormBackward::plan() {
  parts_ = chip_.core.sbuf.partitions;
  T_ = s_.tokens;
  F_ = s_.features;
  n_ = ceil_div(F_, kChunk);
  nfull_ = F_ / kChunk;
  rem_ = F_ - nfull_ * kChunk;
  inv_f_ = 1.0 / static_cast<double>(F_);
  // A slot's time: ScalarE's four passes over a chunk; a row's load at the DMA engines' rate.
  slot_ns_ = 4.0 * kChunk / chip_.core.scalar.clock_ghz;
  const double gbps = 16 * chip_.core.dma.engine_bandwidth_practical_gbps;
  row_load_ns_ = chip_.core.dma.fixed_overhead_ns +
                 static_cast<double>(parts_ * F_ * s_.dtype.storage_bytes) / std::max(gbps, 1.0);
  const int64_t usable = chip_.core.sbuf.usable_bytes_per_partition > 0
                             ? chip_.core.sbuf.usable_bytes_per_partition
                             : chip_.core.sbuf.bytes_per_partition;
  const int64_t budget = usable - usable / 32;  // room for the placement's gaps
  balance();                                    // which buffers there are depends on it
  // The shortest period that fits: n (the tiles overlap fully) up to one tile at a time (the
  // longest span). dres as whole rows, or per group where that makes the period shorter (or
  // the rows fit at no period); groups of two chunks where they cost no period.
  auto shortest = [&](int64_t gs, bool dres_rows) -> int64_t {
    int64_t longest = 0;
    for (const Span& sp : spans(offsets(gs), dres_rows))
      longest = std::max(longest, sp.to - sp.from + 1);
    for (int64_t p = n_; p <= longest; ++p)
      if (sbuf_bytes(p, gs, dres_rows) <= budget) return p;
    return sbuf_bytes(longest, gs, dres_rows) <= budget ? longest : -1;
  };
  const int64_t by_rows = shortest(1, true);
  const int64_t by_groups = s_.residual ? shortest(1, false) : -1;
  // Where gathered rows move slower than blocks (NC-v2), dres per group only when rows cannot.
  const auto& dma = chip_.core.dma;
  const bool gathered_slow =
      dma.core_bandwidth_gbps.has_value() &&
      dma.core_bandwidth_gbps.value_or(0) < dma.core_block_bandwidth_gbps.value_or(gbps);
  dres_rows_ =
      !s_.residual || by_groups < 0 || (by_rows >= 0 && (gathered_slow || by_rows <= by_groups));
  period_ = dres_rows_ ? by_rows : by_groups;
  if (period_ < 0) {  // nothing fits: one tile at a time, and spills
    int64_t longest = 0;
    for (const Span& sp : spans(offsets(1), dres_rows_))
      longest = std::max(longest, sp.to - sp.from + 1);
    period_ = longest;
  }
  gs_ = n_ >= 8 && sbuf_bytes(period_, 2, dres_rows_) <= budget ? 2 : 1;
}

// Per chunk, which engine makes what (the cost tables of core/cost: a two-input op streams two
// cycles a column, one with a source in PSUM one; ScalarE one; GpSimd adds its start): the
// fractions of the columns of P (RMSNorm) and G (LayerNorm) VectorE makes from TensorE's copy of
// dy in PSUM, the rest GpSimd from SBUF; of G', VectorE from ScalarE's rstd dy in PSUM, the
// rest GpSimd from it in SBUF; of dx, made from ScalarE's Y in PSUM (the rest by one VectorE
// scalar_tensor_tensor from x, RMSNorm); of B and the dres add, on VectorE (the rest GpSimd).
// Chosen in eighths to make the busiest engine's time per chunk least; where VectorE and GpSimd
// share an SBUF port (NC-v2) their times add, and so do VectorE's and ScalarE's PSUM accesses
// where they share that port.
void NormBackward::balance() {
  const arch::CoreSpec& c = chip_.core;
  const double w = kChunk, gstart = c.cost.gpsimd_start_cycles, red = c.cost.min_ii_cycles;
  const bool vg_port = c.ports.vector_gpsimd_sbuf_conflict;
  const bool vs_port = c.ports.vector_scalar_psum_conflict;
  const int res = s_.residual ? 1 : 0;
  double best = 1e30;
  for (int pv = 0; pv <= 8; ++pv)
    for (int yv = 0; yv <= 8; ++yv)
      for (int gv = 0; gv <= 8; ++gv)
        for (int bv = 0; bv <= 8; ++bv) {
          if (layer_ && yv != 8) continue;  // LayerNorm's dx needs Y's bias
          const double fp = pv / 8.0, fy = yv / 8.0, fg = gv / 8.0, fb = bv / 8.0;
          // Per chunk: cycles of each engine, and the PSUM-touching ones of VectorE and ScalarE.
          double v = 0, g = 0, act = 0, vpsum = 0, apsum = 0, pe = 4 * w;
          auto on_g = [&](double cols, double cycles) {
            if (cols > 0) g += gstart + cycles * cols;
          };
          if (layer_) {
            v += w + 2 * w;  // bn_stats, P = (x - mean) dy
            v += fp * w;     // G from PSUM
            vpsum += fp * w;
            on_g((1 - fp) * w, 2);
            act += 2 * (w + red);  // sums of B and G
            pe += w;               // dbeta
          } else {
            v += fp * w;
            vpsum += fp * w;
            on_g((1 - fp) * w, 2);
            act += 2 * (w + red);  // squares, sums of B
          }
          if (fp > 0) pe += w;                      // dy into PSUM
          v += fg * w + fy * w + (1 - fy) * 2 * w;  // G' (the rest on GpSimd), dx
          vpsum += fg * w + fy * w;
          on_g((1 - fg) * w, 2);
          act += w + fy * w;  // rstd dy, Y
          apsum += fg * w + fy * w;
          for (int k = 0; k < 1 + res; ++k) {  // B, the dres add
            v += fb * 2 * w;
            on_g((1 - fb) * w, 2);
          }
          const double tv = v / c.vector.clock_ghz, tg = g / c.gpsimd.clock_ghz;
          const double ta = act / c.scalar.clock_ghz, tp = pe / c.tensor.clock_ghz;
          double t = std::max({ta, tp, vg_port ? tv + tg : std::max(tv, tg)});
          if (vs_port) t = std::max(t, vpsum / c.vector.clock_ghz + apsum / c.scalar.clock_ghz);
          if (t < best - 1e-9) {
            best = t;
            p_vector_ = fp;
            y_psum_ = fy;
            g_vector_ = fg;
            share_ = fb;
          }
        }
}

void NormBackward::load(Tile& dst, const kernel::Tensor& src, const Rows& t, const char* name) {
  dst = kb_.sbuf(name, s_.dtype, {parts_, F_})({0, t.p});
  kb_.dma_copy(dst, src({t.r0, t.r0 + t.p}));
}

// RMSNorm: ScalarE's sum of squares of the group (the squares themselves go to the junk
// tile); LayerNorm: VectorE's bn_stats per chunk.
void NormBackward::stats_group(Rows& t, int64_t g) {
  const Range r = group_cols(g);
  if (g == 0) {
    t.st = rotate(stbuf_, stbuf_i_)({0, t.p});
    t.win = rotate(winbuf_, winbuf_i_)({0, t.p});
  }
  if (!layer_) {
    kb_.activation_reduce(junk_({0, t.p}, {0, r.b - r.a}), t.col(ss_col(g)), t.x(all, {r.a, r.b}),
                          isa::ActFunc::kSquare);
    return;
  }
  const Range c = group_chunks(g);
  for (int64_t j = c.a; j < c.b; ++j) {
    const Range cc = chunk_cols(j);
    kb_.bn_stats(t.st(all, {bn_col(j), bn_col(j) + 6}), t.x(all, {cc.a, cc.b}));
  }
}

Tile NormBackward::sum_cols(const Rows& t, int64_t c0, int64_t n, int64_t dst) {
  if (n == 1) return t.col(c0);
  kb_.tensor_reduce(t.col(dst), t.st(all, {c0, c0 + n}), AluOp::kAdd);
  return t.col(dst);
}

// rstd, and the dgamma stationary window: rstd where the window tile has its one.
void NormBackward::stats_finish(Rows& t) {
  const Tile rstd = t.col(kRstd);
  if (!layer_) {
    const Tile ss = sum_cols(t, ss_col(0), groups(), kSumSq);
    kb_.activation(rstd, ss, isa::ActFunc::kRsqrt, inv_f_, s_.eps);
  } else {
    kb_.bn_aggr(t.st(all, {kMean, kMean + 2}), t.st(all, {bn_col(0), bn_col(n_)}));
    kb_.tensor_scalar(rstd, t.col(kVar), {AluOp::kAdd, s_.eps}, {AluOp::kPow, -0.5f});
  }
  kb_.tensor_scalar(t.win, ones_win_({0, t.p}), {AluOp::kMult, rstd}, {}, Engine::kGpSimd);
}

// a0: VectorE's columns of chunk j of dy into PSUM (TensorE, exact: fp32 products of ones).
void NormBackward::copy_dy(Rows& t, int64_t j) {
  const Range c = chunk_cols(j);
  const int64_t cv = split(p_vector_, c.b - c.a);
  if (cv == 0) return;
  const Tile ps = psum_next()({0, t.p}, {0, cv});
  kb_.matmul(ps, ident_({0, t.p}, {0, t.p}), t.dy(all, {c.a, c.a + cv}));
  t.dy_ps[static_cast<size_t>(j)] = ps;
}

// a1, a2: P = dy * x (LayerNorm: dy * (x - mean) by one scalar_tensor_tensor) and LayerNorm's
// G = dy * gamma, VectorE's columns from dy in PSUM, GpSimd's from SBUF; dgamma += rstd^T P
// (dbeta += 1^T dy) on TensorE into the chunk's partition.
void NormBackward::products(Rows& t, int64_t j) {
  const size_t g = static_cast<size_t>(j / gs_);
  const Range r = group_cols(static_cast<int64_t>(g)), c = chunk_cols(j);
  if (j % gs_ == 0) {
    t.p_buf[g] = rotate(pbuf_, pbuf_i_)({0, t.p}, {0, r.b - r.a});
    if (layer_) t.g_buf[g] = rotate(ggbuf_, ggbuf_i_)({0, t.p}, {0, r.b - r.a});
  }
  const Tile ps = t.dy_ps[static_cast<size_t>(j)];
  const int64_t w = c.b - c.a, l = c.a - r.a, cv = split(p_vector_, w);
  const Tile pj = t.p_buf[g](all, {l, l + w});
  const Tile dyj = t.dy(all, {c.a, c.b});
  // The columns [0, cv) from dy in PSUM on VectorE, the rest from SBUF on GpSimd.
  auto from_dy = [&](const Tile& dst, const Tile& other) {
    if (cv > 0) kb_.tensor_tensor(dst(all, {0, cv}), ps, other(all, {0, cv}), AluOp::kMult);
    if (cv < w)
      kb_.tensor_tensor(dst(all, {cv, w}), dyj(all, {cv, w}), other(all, {cv, w}), AluOp::kMult,
                        Engine::kGpSimd);
  };
  if (layer_) {
    kb_.scalar_tensor_tensor(pj, t.x(all, {c.a, c.b}), {AluOp::kSubtract, t.col(kMean)},
                             AluOp::kMult, dyj);
    from_dy(t.g_buf[g](all, {l, l + w}), gamma_({0, t.p}, {c.a, c.b}));
  } else {
    from_dy(pj, t.x(all, {c.a, c.b}));
  }
  if (j < nfull_) {
    kb_.matmul(acc_, window(t.win, t.p, j, acc_.size(0)), pj);
    if (layer_) kb_.matmul(acc_b_, window(ones_win_dy_, t.p, acc_b_row_ + j, acc_b_.size(0)), dyj);
  } else {  // the last, partial chunk: its own accumulator, dgamma row 0 (dbeta row 1)
    const int64_t m = acc_part_.size(0);
    kb_.matmul(acc_part_, window(t.win, t.p, 0, m), pj);
    if (layer_) kb_.matmul(acc_part_, window(ones_win_dy_, t.p, 1, m), dyj);
  }
}

// a3: group g's B = P * gamma, over P (after TensorE read it); split VectorE / GpSimd.
void NormBackward::gpsimd_b(Rows& t, int64_t g) {
  const Range r = group_cols(g);
  const Tile pg = t.p_buf[static_cast<size_t>(g)];
  split_tt(kb_, share_, pg, pg, gamma_({0, t.p}, {r.a, r.b}), AluOp::kMult);
}

// a4: ScalarE's sums of B (and LayerNorm's G) of group g.
void NormBackward::sums(Rows& t, int64_t g) {
  const Range r = group_cols(g);
  const Tile junk = junk_({0, t.p}, {0, r.b - r.a});
  kb_.activation_reduce(junk, t.col(sb_col(g)), t.p_buf[static_cast<size_t>(g)],
                        isa::ActFunc::kCopy);
  if (layer_)
    kb_.activation_reduce(junk, t.col(sg_col(g)), t.g_buf[static_cast<size_t>(g)],
                          isa::ActFunc::kCopy);
}

// -k = -rstd^3 sum(B) / F; LayerNorm's bias k mean - rstd sum(G) / F.
void NormBackward::a_finish(Rows& t) {
  const Tile rstd = t.col(kRstd), negk = t.col(kNegK), tmp = t.col(kTmp);
  const Tile sb = sum_cols(t, sb_col(0), groups(), kSumB);
  kb_.tensor_scalar(tmp, rstd, {AluOp::kMult, rstd}, {AluOp::kMult, rstd});
  kb_.tensor_scalar(negk, sb, {AluOp::kMult, tmp}, {AluOp::kMult, -inv_f_});
  if (layer_) {
    const Tile sg = sum_cols(t, sg_col(0), groups(), kSumG);
    const Tile bias = t.col(kBias);
    kb_.tensor_scalar(tmp, sg, {AluOp::kMult, rstd}, {AluOp::kMult, -inv_f_});
    kb_.tensor_scalar(bias, negk, {AluOp::kMult, t.col(kMean)}, {AluOp::kMult, -1.0f});
    kb_.tensor_tensor(bias, bias, tmp, AluOp::kAdd);
  }
}

// b0: ScalarE's rstd * dy of chunk j, into PSUM for VectorE's columns of G', SBUF for GpSimd's.
void NormBackward::scale_dy(Rows& t, int64_t j) {
  const Range c = chunk_cols(j);
  const int64_t w = c.b - c.a, cv = split(g_vector_, w);
  if (cv > 0) {  // for VectorE: into PSUM
    const Tile ps = psum_next()({0, t.p}, {0, cv});
    kb_.activation(ps, t.dy(all, {c.a, c.a + cv}), isa::ActFunc::kCopy, t.col(kRstd));
    t.sdy_ps[static_cast<size_t>(j)] = ps;
  }
  if (cv < w) {  // for GpSimd: into SBUF
    const Tile sb = rotate(sdbuf_, sdbuf_i_)({0, t.p}, {0, w - cv});
    kb_.activation(sb, t.dy(all, {c.a + cv, c.b}), isa::ActFunc::kCopy, t.col(kRstd));
    t.sdy_sb[static_cast<size_t>(j)] = sb;
  }
}

// b1: G' = rstd dy * gamma of chunk j (VectorE from PSUM, GpSimd from SBUF).
void NormBackward::gradient(Rows& t, int64_t j) {
  const size_t g = static_cast<size_t>(j / gs_);
  const Range r = group_cols(static_cast<int64_t>(g)), c = chunk_cols(j);
  if (j % gs_ == 0) t.gp_buf[g] = rotate(gbuf_, gbuf_i_)({0, t.p}, {0, r.b - r.a});
  const int64_t w = c.b - c.a, l = c.a - r.a, cv = split(g_vector_, w);
  const Tile gp = t.gp_buf[g](all, {l, l + w}), gam = gamma_({0, t.p}, {c.a, c.b});
  if (cv > 0)
    kb_.tensor_tensor(gp(all, {0, cv}), t.sdy_ps[static_cast<size_t>(j)], gam(all, {0, cv}),
                      AluOp::kMult);
  if (cv < w)
    kb_.tensor_tensor(gp(all, {cv, w}), t.sdy_sb[static_cast<size_t>(j)], gam(all, {cv, w}),
                      AluOp::kMult, Engine::kGpSimd);
}

// b2: G' += dres of group g, split VectorE / GpSimd.
void NormBackward::add_dres(Rows& t, int64_t g) {
  const Range r = group_cols(g);
  const Tile gp = t.gp_buf[static_cast<size_t>(g)];
  const Tile dres = dres_rows_ ? t.dres(all, {r.a, r.b}) : t.dres_buf[static_cast<size_t>(g)];
  split_tt(kb_, share_, gp, gp, dres, AluOp::kAdd);
}

// b3: ScalarE's Y = -k x (+ bias) of chunk j into PSUM.
void NormBackward::scale_x(Rows& t, int64_t j) {
  const Range c = chunk_cols(j);
  const kernel::Scalar bias = layer_ ? kernel::Scalar(t.col(kBias)) : kernel::Scalar(0.0f);
  const int64_t cy = split(y_psum_, c.b - c.a);
  if (cy == 0) return;
  const Tile ps = psum_next()({0, t.p}, {0, cy});
  kb_.activation(ps, t.x(all, {c.a, c.a + cy}), isa::ActFunc::kCopy, t.col(kNegK), bias);
  t.y_ps[static_cast<size_t>(j)] = ps;
}

// b4: dx = G' + Y of chunk j (VectorE, Y from PSUM), rounded once, over x's chunk.
void NormBackward::dx(Rows& t, int64_t j) {
  const size_t g = static_cast<size_t>(j / gs_);
  const Range r = group_cols(static_cast<int64_t>(g)), c = chunk_cols(j);
  const int64_t w = c.b - c.a, l = c.a - r.a, cy = split(y_psum_, w);
  const Tile xj = t.x(all, {c.a, c.b}), gp = t.gp_buf[g](all, {l, l + w});
  if (cy > 0)
    kb_.tensor_tensor(xj(all, {0, cy}), gp(all, {0, cy}), t.y_ps[static_cast<size_t>(j)],
                      AluOp::kAdd);
  if (cy < w)  // RMSNorm: dx = x * -k + G' in one VectorE op
    kb_.scalar_tensor_tensor(xj(all, {cy, w}), xj(all, {cy, w}), {AluOp::kMult, t.col(kNegK)},
                             AluOp::kAdd, gp(all, {cy, w}));
}

// Every item of tile t, its phase A starting at slot a.
void NormBackward::place_tile(Rows& t, int64_t a) {
  const Offsets o = offsets(gs_);
  const int64_t ng = groups();
  for (auto* v : {&t.dy_ps, &t.sdy_ps, &t.sdy_sb, &t.y_ps}) v->resize(static_cast<size_t>(n_));
  for (auto* v : {&t.p_buf, &t.g_buf, &t.gp_buf, &t.dres_buf}) v->resize(static_cast<size_t>(ng));
  at(a + o.load_x, kLoad, [this, &t] { load(t.x, x_, t, "x"); });
  at(a + o.load_dy, kLoad, [this, &t] { load(t.dy, dy_, t, "dy"); });
  if (s_.residual && dres_rows_)
    at(a + o.load_dres, kLoad, [this, &t] { load(t.dres, dres_, t, "dres"); });
  for (int64_t g = 0; g < ng; ++g) {
    const int64_t last = group_chunks(g).b - 1;
    at(a + o.stats_first + last, kStats, [this, &t, g] { stats_group(t, g); });
    at(a + last + 1, kGpsimd, [this, &t, g] { gpsimd_b(t, g); });
    at(a + last + o.sums_lag, kSums, [this, &t, g] { sums(t, g); });
    if (s_.residual) {
      at(a + o.b + last + 1, kGpsimd, [this, &t, g] { add_dres(t, g); });
      if (!dres_rows_)  // the group's dres, into a rotating buffer
        at(a + o.b + last + 1 - o.dres_lead, kLoad, [this, &t, g] {
          const Range r = group_cols(g);
          const Tile buf = rotate(rbuf_, rbuf_i_)({0, t.p}, {0, r.b - r.a});
          kb_.dma_copy(buf, dres_({t.r0, t.r0 + t.p}, {r.a, r.b}));
          t.dres_buf[static_cast<size_t>(g)] = buf;
        });
    }
  }
  at(a - 2, kFinish, [this, &t] { stats_finish(t); });
  for (int64_t j = 0; j < n_; ++j) {
    at(a + j - 1, kCopyDy, [this, &t, j] { copy_dy(t, j); });
    at(a + j, kProducts, [this, &t, j] { products(t, j); });
    at(a + o.b + j - 1, kScaleDy, [this, &t, j] { scale_dy(t, j); });
    at(a + o.b + j, kGradient, [this, &t, j] { gradient(t, j); });
    at(a + o.b + j + o.dx_lag, kScaleX, [this, &t, j] { scale_x(t, j); });
    at(a + o.b + j + o.dx_lag + 1, kDx, [this, &t, j] { dx(t, j); });
  }
  at(a + n_ - 1 + o.sums_lag, kFinish, [this, &t] { a_finish(t); });
  at(a + o.store, kStore, [this, &t] {
    kb_.dma_copy(dx_({t.r0, t.r0 + t.p}), t.x);
    t.done = true;
  });
}

// gamma on every partition; the identity (dy into PSUM); the window tiles: a one at column 2n
// of 4n + 1 (fp32 for dgamma's rstd, the dtype for dbeta's ones); the junk tile ScalarE's
// reductions write their elements to; the accumulators and the rotating buffers.
void NormBackward::constants() {
  gamma_ = kb_.sbuf("gamma", num::fp32(), {parts_, F_});
  // In pieces of four chunks, from GpSimd's queue (idle until the first tile's phase A, which
  // takes gamma chunk by chunk), beside the loads on the Sync engine's.
  for (int64_t a = 0; a < F_; a += 4 * kChunk) {
    const int64_t b = std::min(F_, a + 4 * kChunk);
    kb_.dma_copy(gamma_(all, {a, b}), gamma_in_({a, b}).broadcast(0, parts_),
                 {.trigger = Engine::kGpSimd});
  }
  ident_ = kb_.sbuf("ident", s_.dtype, {parts_, parts_});
  kb_.memset(ident_, 1.0, Engine::kGpSimd);
  kb_.affine_select(ident_, ident_, AluOp::kIsEqual, 0, -1, 0.0);
  ones_win_ = kb_.sbuf("win_ones", num::fp32(), {parts_, 4 * n_ + 1});
  kb_.memset(ones_win_, 1.0, Engine::kGpSimd);
  kb_.affine_select(ones_win_, ones_win_, AluOp::kIsEqual, -2 * n_, 0, 0.0);
  if (layer_) {
    ones_win_dy_ = kb_.sbuf("win_ones_dy", s_.dtype, {parts_, 4 * n_ + 1});
    kb_.tensor_copy(ones_win_dy_, ones_win_, Engine::kGpSimd);
  }
  // dgamma's rows (and dbeta's after them where both fit the partitions, else in a bank of
  // their own).
  const bool shared = layer_ && 2 * nfull_ <= parts_;
  if (nfull_ > 0) {
    acc_ = kb_.psum("acc", num::fp32(), {(shared ? 2 : 1) * nfull_, kChunk});
    acc_b_ = shared ? acc_ : layer_ ? kb_.psum("acc_b", num::fp32(), {nfull_, kChunk}) : Tile{};
    acc_b_row_ = shared ? nfull_ : 0;
  }
  if (rem_ > 0) acc_part_ = kb_.psum("acc_part", num::fp32(), {layer_ ? 2 : 1, rem_});
  const int64_t acc_banks = (nfull_ > 0 ? (layer_ && !shared ? 2 : 1) : 0) + (rem_ > 0 ? 1 : 0);
  const int64_t banks = chip_.core.psum.banks;
  psum_ = kb_.psum_buffers("stage", num::fp32(), {parts_, kChunk},
                           static_cast<int>(std::max<int64_t>(2, banks - acc_banks)));
  // One arena for the small buffers that rotate (a tile that lives the whole kernel, placed
  // before the rows come and go, so that they find whole gaps): P, G' (LayerNorm's G) per
  // group in flight, the junk ScalarE's reductions write their elements to, each tile's
  // statistics and dgamma window.
  const int64_t w = gs_ * kChunk, wins = 4 * n_ + 1;
  const Offsets o = offsets(gs_);
  const int64_t live = ceil_div(o.store - o.stats_first + 1, period_) + 1;
  const int64_t nbuf = layer_ ? 13 : 9;
  const Tile arena =
      kb_.sbuf("buffers", num::fp32(),
               {parts_, (nbuf + 1) * w + sd_buffers() * kChunk + live * (stat_cols() + wins)});
  int64_t used = 0;
  auto take = [&](int64_t cols) {
    const Tile v = arena(all, {used, used + cols});
    used += cols;
    return v;
  };
  for (int i = 0; i < 4; ++i) pbuf_.push_back(take(w));
  for (int i = 0; i < 5; ++i) gbuf_.push_back(take(w));
  if (layer_)
    for (int i = 0; i < 4; ++i) ggbuf_.push_back(take(w));
  junk_ = take(w);
  for (int64_t i = 0; i < sd_buffers(); ++i) sdbuf_.push_back(take(kChunk));
  for (int64_t i = 0; i < live; ++i) stbuf_.push_back(take(stat_cols()));
  for (int64_t i = 0; i < live; ++i) winbuf_.push_back(take(wins));
  if (s_.residual && !dres_rows_) {
    const int64_t nr = dres_buffers(o, gs_);
    const Tile r = kb_.sbuf("dres_stage", s_.dtype, {parts_, nr * w});
    for (int64_t i = 0; i < nr; ++i) rbuf_.push_back(r(all, {i * w, (i + 1) * w}));
  }
}

// The accumulators out of PSUM (rows of 512 columns: row j is columns [512 j, 512 j + 512)).
void NormBackward::finish_outputs() {
  if (nfull_ > 0) {
    const Tile row = kb_.sbuf("acc_out", num::fp32(), {acc_.size(0), kChunk});
    kb_.tensor_copy(row, acc_);
    kb_.dma_copy(dgamma_({0, nfull_ * kChunk}).reshape({nfull_, kChunk}), row({0, nfull_}));
    if (layer_) {
      Tile brow = row({acc_b_row_, acc_b_row_ + nfull_});
      if (acc_b_row_ == 0) {
        brow = kb_.sbuf("acc_b_out", num::fp32(), {nfull_, kChunk});
        kb_.tensor_copy(brow, acc_b_);
      }
      kb_.dma_copy(dbeta_({0, nfull_ * kChunk}).reshape({nfull_, kChunk}), brow);
    }
  }
  if (rem_ > 0) {
    const Tile row = kb_.sbuf("part_out", num::fp32(), {acc_part_.size(0), rem_});
    kb_.tensor_copy(row, acc_part_);
    kb_.dma_copy(dgamma_({nfull_ * kChunk, F_}).reshape({1, rem_}), row({0, 1}));
    if (layer_) kb_.dma_copy(dbeta_({nfull_ * kChunk, F_}).reshape({1, rem_}), row({1, 2}));
  }
}

isa::Program NormBackward::build() {
  plan();
  x_ = kb_.input("x", s_.dtype, {T_, F_});
  dy_ = kb_.input("dy", s_.dtype, {T_, F_});
  gamma_in_ = kb_.input("gamma", num::fp32(), {F_});
  if (s_.residual) dres_ = kb_.input("dres", s_.dtype, {T_, F_});
  dx_ = kb_.output("dx", s_.dtype, {T_, F_});
  dgamma_ = kb_.output("dgamma", num::fp32(), {F_});
  if (layer_) dbeta_ = kb_.output("dbeta", num::fp32(), {F_});

  // The constants first (placed before the rows that come and go), then the items in slot
  // order: a tile's items are made when the tiles before them have left none earlier to make;
  // a tile's state goes once its store is emitted.
  constants();
  const Offsets o = offsets(gs_);
  const int64_t tiles = ceil_div(T_, parts_);
  std::deque<Rows> rows;
  auto earlier = [](const Item& a, const Item& b) {
    return a.slot != b.slot     ? a.slot < b.slot
           : a.order != b.order ? a.order < b.order
                                : a.seq < b.seq;
  };
  for (int64_t i = 0; i <= tiles; ++i) {
    if (i < tiles) {
      Rows& t = rows.emplace_back();
      t.r0 = i * parts_;
      t.p = std::min(parts_, T_ - t.r0);
      place_tile(t, i * period_);
    }
    // Every item before the next tile's first can go.
    const int64_t next =
        i + 1 < tiles ? (i + 1) * period_ + o.load_x : std::numeric_limits<int64_t>::max();
    std::stable_sort(items_.begin(), items_.end(), earlier);
    size_t k = 0;
    for (; k < items_.size() && items_[k].slot < next; ++k) items_[k].emit();
    items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(k));
    while (!rows.empty() && rows.front().done) rows.pop_front();
  }
  finish_outputs();
  return kb_.build();
}

}  // namespace

isa::Program norm_backward(const arch::ChipSpec& chip, const NormGradSpec& s) {
  require_range("norm_backward", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("norm_backward", "features", s.features, 1, 65536);
  if (s.norm == Norm::kNone)
    throw InputError("norm_backward", "norm", "a norm backward needs rmsnorm or layernorm");
  if (!(s.eps >= 0.0)) throw InputError("norm_backward", "eps", "must be >= 0");
  return NormBackward(chip, s).build();
}

}  // namespace trnsim::ops
