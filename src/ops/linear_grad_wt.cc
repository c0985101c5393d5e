#include "ops/linear_grad_wt.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "isa/instruction.h"
#include "ops/rows.h"

namespace trnsim::ops::lgrad {

using kernel::all;
using kernel::Tile;

int64_t usable_sbuf(const arch::ChipSpec& chip) {
  return chip.core.sbuf.usable_bytes_per_partition > 0 ? chip.core.sbuf.usable_bytes_per_partition
                                                       : chip.core.sbuf.bytes_per_partition;
}

std::vector<Cols> split_cols(const std::vector<int64_t>& splits, int64_t width) {
  std::vector<Cols> out;
  int64_t g = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    for (int64_t c = 0; c < splits[i]; c += width)
      out.push_back({static_cast<int>(i), c, g + c, std::min(width, splits[i] - c)});
    g += splits[i];
  }
  return out;
}

// ---------------------------------------------------------------- the plan

namespace {

// At most 2 banks (1024 columns of K) per K block and 4 token tiles per block but on the
// scratch path; TensorE transposes stage 16 tiles of dy at a time (or whole rows).
constexpr int64_t kMaxKBanks = 2, kMaxTokenTiles = 4;
constexpr int64_t kDyStageTiles = 16;
// The scratch path: loads at least this far (ns of matmuls) ahead of their job, in at most so
// many buffers.
constexpr double kLookaheadNs = 8000;
constexpr int64_t kMaxWBuffers = 16;

// Tiles of a dy staging buffer that two of take an eighth of SBUF.
int64_t dy_stage_cap(const arch::ChipSpec& chip, int64_t e) {
  return usable_sbuf(chip) / 16 / (chip.core.sbuf.partitions * e);
}

// The core's DMA rates in bytes per ns for transfers whose HBM side is one contiguous block
// and for those that gather rows (docs/timing.md "DMA"): the engines' practical rate, the HBM
// stack's and the core's caps, whichever is lowest.
struct DmaRates {
  double block = 1, gathered = 1;
};

DmaRates dma_rates(const arch::ChipSpec& chip) {
  const auto& d = chip.core.dma;
  double r = d.engines * d.engine_bandwidth_practical_gbps;
  const auto& hbm = chip.chip.hbm;
  if (hbm.bandwidth_gbps > 0)
    r = std::min(r, hbm.bandwidth_gbps / hbm.stacks.value_or(std::max(chip.chip.cores, 1)));
  DmaRates out{r, r};
  if (d.core_bandwidth_gbps) out.block = out.gathered = std::min(r, *d.core_bandwidth_gbps);
  if (d.core_block_bandwidth_gbps) out.block = std::min(r, *d.core_block_bandwidth_gbps);
  return out;
}

// What a plan is estimated to take (ns): TensorE's matmuls and transposes (a block transpose
// streams 128 columns) against the bytes the DMA moves, each at the rate of its kind (DMA
// transposes read rows at 90% of the gathered rate), whichever is longer; after the scratch
// pass (its reads and writes against its transposes), or with the pass beside the first token
// block when fused. dma_ns: the DMA's part, to break ties.
struct Estimate {
  double ns = 0, dma_ns = 0;
  bool operator<(const Estimate& o) const { return ns < o.ns || (ns == o.ns && dma_ns < o.dma_ns); }
};

Estimate input_estimate(const arch::ChipSpec& chip, const LinearGradInputSpec& s,
                        const InputPlan& p) {
  const int64_t parts = chip.core.sbuf.partitions;
  const auto P = static_cast<double>(parts), e = static_cast<double>(s.dtype.storage_bytes);
  const DmaRates r = dma_rates(chip);
  const double tr = r.gathered * 0.9, clock = chip.core.tensor.clock_ghz;
  const Cols& last = p.tiles.back();
  const auto T = static_cast<double>(s.tokens), K = static_cast<double>(s.in);
  const double N = static_cast<double>(last.g0 + last.n), nt = static_cast<double>(p.nt);
  const int64_t kblocks = ceil_div(s.in, p.kbanks * kBank);
  const auto blocks = static_cast<double>(ceil_div(s.tokens, p.tb));
  const auto token_tiles = static_cast<double>(ceil_div(s.tokens, parts));
  const auto ktiles = static_cast<double>(ceil_div(s.in, parts));
  const double dy_bytes = T * N * e, w_bytes = K * N * e, padded = nt * P * K * e;
  // dy^T made once per token block when kept (dy_res, the ring), else per K block; w^T made
  // once (resident), per token block (chunks) or loaded from the scratch per token block.
  const double dy_makes = p.dy_res || p.ring > 0 ? 1.0 : static_cast<double>(kblocks);
  const double w_makes = p.w_scratch ? 0.0 : p.w_res ? 1.0 : blocks;
  double pe = token_tiles * nt * K;
  if (!p.dma_transpose) pe += (dy_makes * token_tiles + w_makes * ktiles) * nt * P;
  double dma = T * K * e * (s.accumulate ? 2.0 : 1.0) / (kblocks == 1 ? r.block : r.gathered);
  if (p.dma_transpose)
    dma += (dy_makes * dy_bytes + w_makes * w_bytes) / tr;
  else
    dma += dy_makes * dy_bytes / (p.dy_rows ? r.block : r.gathered) +
           w_makes * w_bytes / (p.w_rows ? r.block : r.gathered);
  Estimate est;
  if (p.w_scratch) {
    const double stream = padded / r.block;  // w^T per token block
    const double pass_dma = w_bytes / (p.w_rows ? r.block : r.gathered) +
                            (p.fuse0 && blocks == 1 ? 0.0 : padded / r.block);
    const double pass_pe = ktiles * nt * P / clock;
    if (p.fuse0) {
      // The first block beside the pass (its w^T from the pass, no stream), then the others.
      const double pe_b = pe / clock / blocks, dma_b = dma / blocks;
      est.ns = std::max(pe_b + pass_pe, dma_b + pass_dma) +
               (blocks - 1) * std::max(pe_b, dma_b + stream);
      est.dma_ns = dma + pass_dma + (blocks - 1) * stream;
      return est;
    }
    dma += blocks * stream;
    est.ns = std::max(pass_pe, pass_dma);
    est.dma_ns = pass_dma;
  }
  est.ns += std::max(pe / clock, dma);
  est.dma_ns += dma;
  return est;
}

// The plans that make w^T in SBUF: whole and once when it fits, else per token block.
InputPlan chunk_plan(const arch::ChipSpec& chip, const LinearGradInputSpec& s) {
  const int64_t parts = chip.core.sbuf.partitions, e = s.dtype.storage_bytes;
  InputPlan p;
  p.dma_transpose = chip.core.dma.transpose && (e == 2 || e == 4);
  p.tiles = split_cols(s.splits, parts);
  p.nt = static_cast<int64_t>(p.tiles.size());
  // TensorE transposes rotate through two PSUM banks.
  p.avail_banks = chip.core.psum.banks - (p.dma_transpose ? 0 : 2);
  p.kbanks = std::clamp<int64_t>(ceil_div(s.in, kBank), 1,
                                 std::clamp<int64_t>(p.avail_banks / 2, 1, kMaxKBanks));
  const int64_t kbw = p.kbanks * kBank;
  const int64_t token_tiles = ceil_div(s.tokens, parts);
  const int64_t max_split = *std::max_element(s.splits.begin(), s.splits.end());
  // dy staged in runs of one split: whole rows of the widest split when two such buffers take
  // at most an eighth of SBUF, else runs of at least kDyStageTiles tiles.
  p.stage_tiles = std::min(
      p.nt, std::max(kDyStageTiles, std::min(ceil_div(max_split, parts), dy_stage_cap(chip, e))));
  // SBUF for the transposed operands: what the results, dacc and the staging leave (90% of it:
  // placement needs some slack).
  int64_t fixed = 2 * kbw * e;
  if (s.accumulate) fixed += 2 * std::min(kMaxTokenTiles, token_tiles) * kbw * e;
  if (!p.dma_transpose)
    fixed += 2 * p.stage_tiles * parts * e +
             2 * (kbw / parts) * std::min(p.nt, kWStageTiles) * parts * e;
  const int64_t budget = std::max<int64_t>(0, usable_sbuf(chip) - fixed) * 9 / 10;
  const int64_t w_bytes = p.nt * s.in * e;
  const bool w_one_dma = s.in <= kMaxApElements;
  auto whole_rows = [&] {
    // Staged runs of whole rows: w's when a run is all of N, dy's when each split is one run.
    const bool one = p.w_res || p.chunks == 1;
    p.w_rows = !p.dma_transpose && one && p.nt <= kWStageTiles;
    p.dy_rows = !p.dma_transpose && (p.dy_res || one) && max_split <= p.stage_tiles * parts;
  };
  // No chunks: w^T whole and dy^T of two token blocks, the largest block that fits.
  for (int64_t mt = std::min(kMaxTokenTiles, token_tiles); mt >= 1 && w_one_dma; --mt)
    if (w_bytes + 2 * p.nt * mt * parts * e <= budget) {
      p.w_res = p.dy_res = true;
      p.mt = mt;
      p.tb = mt * parts;
      p.nc = p.nt;
      whole_rows();
      return p;
    }
  // Chunks of N: every token tile of the block keeps its accumulators open across them, so
  // the block is as many token tiles as the banks hold.
  p.mt = std::clamp<int64_t>(p.avail_banks / p.kbanks, 1, std::min(kMaxTokenTiles, token_tiles));
  p.tb = p.mt * parts;
  int64_t left = budget;
  p.w_res = w_one_dma && w_bytes <= left / 2;
  if (p.w_res) left -= w_bytes;
  const int64_t dy_bytes = 2 * p.nt * p.tb * e;
  p.dy_res = dy_bytes <= left / 2;
  if (p.dy_res) left -= dy_bytes;
  const int64_t per_tile = kLoadBuffers * ((p.w_res ? 0 : kbw) + (p.dy_res ? 0 : p.tb)) * e;
  p.nc = per_tile > 0 ? std::clamp<int64_t>(left / per_tile, 1, p.nt) : p.nt;
  p.chunks = ceil_div(p.nt, p.nc);
  whole_rows();
  return p;
}

// The scratch path's plan: the fastest by the estimate whose buffers fit SBUF (90% of what
// the results, dacc and the dy staging leave), or none. Candidates: K blocks of one or two
// banks, token blocks of as many tiles as the other banks hold (or fewer), chunks of 16 tiles
// down to one, dy^T kept for two blocks (made per token tile) or one and a chunk, the pass
// alone or (whole rows, when its buffers fit beside the rest) fused with the first block.
std::optional<InputPlan> scratch_plan(const arch::ChipSpec& chip, const LinearGradInputSpec& s,
                                      const InputPlan& base) {
  const int64_t parts = chip.core.sbuf.partitions, e = s.dtype.storage_bytes;
  const int64_t K = s.in, nt = base.nt, usable = usable_sbuf(chip);
  const int64_t token_tiles = ceil_div(s.tokens, parts);
  const int64_t split_tiles = ceil_div(*std::max_element(s.splits.begin(), s.splits.end()), parts);
  InputPlan p = base;
  p.w_res = p.dy_res = false;
  p.w_scratch = true;
  // The loop's transposes are dy's only, and on TensorE only without DMA transposes.
  p.avail_banks = chip.core.psum.banks - (p.dma_transpose ? 0 : 2);
  std::optional<InputPlan> best;
  Estimate best_est;
  for (const int64_t kbanks : {int64_t{1}, int64_t{2}}) {
    if (kbanks > 1 && (kbanks > p.avail_banks || ceil_div(K, kBank) < kbanks)) continue;
    const int64_t kbw = kbanks * kBank;
    for (int64_t mt = std::min(token_tiles, p.avail_banks / kbanks); mt >= 1; --mt) {
      const int64_t blocks = ceil_div(token_tiles, mt);
      for (int64_t nc = std::min<int64_t>(nt, 16); nc >= 1; nc = nc > 1 ? (nc + 1) / 2 : 0)
        for (const bool by_token : {true, false}) {
          if (by_token && blocks < 2) continue;  // no block before the first to spread over
          const int64_t chunks = ceil_div(nt, nc);
          // Loads at least kLookaheadNs of matmuls ahead: w^T (wbufs - 1 jobs ahead) and, per
          // chunk (a window a job), dy's stagings.
          const double job_ns = static_cast<double>(mt * nc * kbw) / chip.core.tensor.clock_ghz;
          const int64_t ahead =
              std::clamp<int64_t>(1 + static_cast<int64_t>(std::ceil(kLookaheadNs / job_ns)),
                                  kLoadBuffers, kMaxWBuffers);
          // dy staging: per token tile the rows of one split, whole when they fit an eighth
          // of SBUF (two buffers); per chunk its columns for every token tile of the block.
          const int64_t cap = std::max(kDyStageTiles, dy_stage_cap(chip, e));
          const int64_t sm = by_token ? 1 : mt;
          const int64_t sw = by_token ? std::min(split_tiles, cap) : nc;
          const int64_t stages = by_token ? kLoadBuffers : ahead;
          int64_t fixed = kScratchOut * kbw * e;
          if (s.accumulate) fixed += 2 * mt * kbw * e;
          if (!p.dma_transpose) fixed += stages * sm * sw * parts * e;
          const int64_t budget = std::max<int64_t>(0, usable - fixed) * 9 / 10;
          const int64_t ring = by_token ? 2 * chunks : chunks + 1;
          const int64_t need = ahead * nc * kbw * e + ring * nc * mt * parts * e;
          if (need > budget) continue;
          InputPlan c = p;
          c.kbanks = kbanks;
          c.mt = mt;
          c.tb = mt * parts;
          c.nc = nc;
          c.chunks = chunks;
          c.ring = ring;
          c.wbufs = ahead;
          c.stages = stages;
          c.dy_by_token = by_token;
          c.stage_m = sm;
          c.stage_tiles = sw;
          c.dy_rows = !p.dma_transpose && by_token && sw >= split_tiles;
          // The pass stages w's rows whole when its staging and transposed buffers (three of
          // each, else two) of all of N take at most 4/5 of SBUF, else in groups of whole
          // chunks (three buffers).
          const int64_t room = usable * 4 / 5 / (2 * parts * e);  // tiles of one buffer pair
          const int64_t ap = kMaxApElements / parts;
          c.pass_bufs = 3 * nt <= room ? 3 : 2;
          c.pass_group = c.pass_bufs * nt <= room && nt <= ap
                             ? nt
                             : std::max<int64_t>(1, std::min(room / 3, ap) / nc) * nc;
          if (c.pass_group < nt) c.pass_bufs = 3;
          c.w_rows = c.pass_group >= nt;
          auto consider = [&](const InputPlan& q) {
            const Estimate est = input_estimate(chip, s, q);
            if (!best || est < best_est) {
              best = q;
              best_est = est;
            }
          };
          consider(c);
          // Fused: the pass's buffers (two of each, whole rows) beside all of the above.
          const int64_t pass_bytes = 2 * 2 * nt * parts * e;
          if (c.w_rows && need + pass_bytes <= budget) {
            c.fuse0 = true;
            c.pass_bufs = 2;
            consider(c);
          }
        }
    }
  }
  return best;
}

}  // namespace

// The chunk plans, or the scratch path when w^T is not made once and the estimate says the
// scratch is faster.
InputPlan input_plan(const arch::ChipSpec& chip, const LinearGradInputSpec& s) {
  const InputPlan p = chunk_plan(chip, s);
  if (p.w_res) return p;
  const std::optional<InputPlan> sp = scratch_plan(chip, s, p);
  if (sp && input_estimate(chip, s, *sp) < input_estimate(chip, s, p)) return *sp;
  return p;
}

// ---------------------------------------------------------------- transposes

Transposer::Transposer(kernel::KernelBuilder& kb, num::Format dt, int bufs) : kb_(kb) {
  const arch::CoreSpec& core = kb.core();
  const int64_t parts = core.sbuf.partitions;
  const num::Format tdt =
      core.features.bit_exact_transpose && dt.storage_bytes >= 2 ? dt : num::fp32();
  per_bank_ = std::max<int64_t>(1, core.psum.bank_bytes / (parts * tdt.storage_bytes));
  bufs_ = kb.psum_buffers("T_psum", tdt, {parts, per_bank_, parts}, bufs);
}

void Transposer::copy_out(const kernel::View& dst, const kernel::View& src) {
  if (copy_no_++ % 2 == 0)
    kb_.tensor_copy(dst, src);
  else
    kb_.activation(dst, src, isa::ActFunc::kCopy);
}

// ---------------------------------------------------------------- per job

WtMaker::WtMaker(kernel::KernelBuilder& kb, const kernel::Tensor& w, const std::vector<Cols>& tiles,
                 Transposer* tp, int64_t kbw, int64_t stage_tiles)
    : kb_(kb), w_(w), tiles_(tiles), tp_(tp), kbw_(kbw), stage_tiles_(stage_tiles) {
  if (tp_ == nullptr) return;
  const int64_t parts = kb.core().sbuf.partitions;
  const auto nt = static_cast<int64_t>(tiles.size());
  stage_ =
      kb.sbuf_buffers("w", w.dtype(), {parts, kbw / parts, std::min(nt, stage_tiles) * parts}, 2);
}

void WtMaker::make(const Tile& dst, int64_t jb, int64_t cb, int64_t j0, int64_t j1, int64_t k0,
                   int64_t kbn) {
  if (tp_ == nullptr) {
    for (int64_t j = j0; j < j1; ++j) {
      const Cols& c = tiles_[j];
      kb_.dma_transpose(dst({0, c.n}, j - jb, {cb, cb + kbn}),
                        w_({k0, k0 + kbn}, {c.g0, c.g0 + c.n}));
    }
    return;
  }
  const int64_t parts = dst.size(0), per_bank = tp_->per_bank();
  // w rows staged K tile by K tile ([128 rows of K, tiles, columns]), transposed per block.
  for (int64_t ka = k0; ka < k0 + kbn; ka += kbw_) {
    const int64_t kn = std::min(kbw_, k0 + kbn - ka);
    const int64_t kts = (kn + parts - 1) / parts;
    for (int64_t r0 = j0; r0 < j1; r0 += stage_tiles_) {
      const int64_t r1 = std::min(j1, r0 + stage_tiles_);
      const int64_t G0 = tiles_[r0].g0, cols = tiles_[r1 - 1].g0 + tiles_[r1 - 1].n - G0;
      const Tile& st = stage_[static_cast<size_t>(stage_no_++ % 2)];
      // One DMA per K tile: each a block of whole rows when the run is all of N.
      for (int64_t r = 0; r < kts; ++r) {
        const int64_t kr = std::min(parts, kn - r * parts);
        kb_.dma_copy(st({0, kr}, r, {0, cols}),
                     w_({ka + r * parts, ka + r * parts + kr}, {G0, G0 + cols}));
      }
      for (int64_t j = r0; j < r1; ++j) {
        const int64_t nr = tiles_[j].n, off = tiles_[j].g0 - G0;
        for (int64_t r = 0; r < kts;) {
          const int64_t kr = std::min(parts, kn - r * parts);
          int64_t g = 1;
          while (kr == parts && g < per_bank && r + g < kts && kn - (r + g) * parts >= parts) ++g;
          const Tile& tp = tp_->next();
          for (int64_t q = 0; q < g; ++q)
            kb_.transpose(tp({0, nr}, q, {0, kr}), st({0, kr}, r + q, {off, off + nr}));
          const int64_t c = cb + (ka - k0) + r * parts;
          tp_->copy_out(dst({0, nr}, j - jb, {c, c + g * kr}).reshape({nr, g, kr}),
                        tp({0, nr}, {0, g}, {0, kr}));
          r += g;
        }
      }
    }
  }
}

// ---------------------------------------------------------------- the HBM scratch

WtScratch::WtScratch(kernel::KernelBuilder& kb, const std::vector<Cols>& tiles, int64_t in,
                     int64_t nc, num::Format dt, bool store)
    : kb_(kb),
      tiles_(tiles),
      K_(in),
      nc_(nc),
      nt_(static_cast<int64_t>(tiles.size())),
      parts_(kb.core().sbuf.partitions) {
  // Rows of 128 elements: every block is whole rows, so the dependencies of a block's loads
  // are on the writes of that block only.
  if (store) s_ = kb.scratch("wT_scratch", dt, {nt_ * K_, parts_});
}

int64_t WtScratch::block_offset(int64_t c, int64_t kt) const {
  const int64_t q = std::min(nc_, nt_ - c * nc_);
  return parts_ * (c * nc_ * K_ + q * kt * parts_);
}

void WtScratch::begin(const kernel::Tensor& w, Transposer& tp, int64_t group, int bufs) {
  w_ = w;
  tp_ = &tp;
  group_ = std::min(group, nt_);
  bufs_ = bufs;
  groups_ = (nt_ + group_ - 1) / group_;
  stage_ = kb_.sbuf_buffers("w_rows", w.dtype(), {parts_, group_ * parts_}, bufs);
  out_ = kb_.sbuf_buffers("wT_out", w.dtype(), {parts_, group_, parts_}, bufs);
  for (int64_t n = 0; n < bufs; ++n) load_rows(n);
}

int64_t WtScratch::steps() const { return (K_ + parts_ - 1) / parts_ * groups_; }

void WtScratch::load_rows(int64_t n) {
  if (n >= steps()) return;
  const int64_t P = parts_, k0 = n / groups_ * P, kr = std::min(P, K_ - k0);
  const int64_t g0 = n % groups_ * group_, g1 = std::min(nt_, g0 + group_);
  const int64_t G0 = tiles_[g0].g0, cols = tiles_[g1 - 1].g0 + tiles_[g1 - 1].n - G0;
  kb_.dma_copy(stage_[static_cast<size_t>(n % bufs_)]({0, kr}, {0, cols}),
               w_({k0, k0 + kr}, {G0, G0 + cols}));
}

const Tile& WtScratch::step(int64_t n) {
  const int64_t P = parts_, per_bank = tp_->per_bank();
  const int64_t k0 = n / groups_ * P, kr = std::min(P, K_ - k0), g0 = n % groups_ * group_;
  const int64_t g1 = std::min(nt_, g0 + group_), G0 = tiles_[g0].g0;
  const Tile& st = stage_[static_cast<size_t>(n % bufs_)];
  const Tile& ot = out_[static_cast<size_t>(n % bufs_)];
  for (int64_t j = g0; j < g1;) {
    // Full tiles share a PSUM tile and one copy; a short tile is alone.
    int64_t g = 1;
    while (tiles_[j].n == P && g < per_bank && j + g < g1 && tiles_[j + g].n == P) ++g;
    const int64_t nr = tiles_[j].n;
    const Tile& t = tp_->next();
    for (int64_t q = 0; q < g; ++q) {
      const int64_t off = tiles_[j + q].g0 - G0;
      kb_.transpose(t({0, nr}, q, {0, kr}), st({0, kr}, {off, off + nr}));
    }
    tp_->copy_out(ot({0, nr}, {j - g0, j - g0 + g}, {0, kr}), t({0, nr}, {0, g}, {0, kr}));
    j += g;
  }
  // The rows this buffer holds next (the load queue is in order: right after what frees it).
  load_rows(n + bufs_);
  // The chunks of the group (group is a multiple of nc): one dense block each.
  for (int64_t j0 = g0; j0 < g1 && s_.valid(); j0 += nc_) {
    const int64_t q = std::min(nc_, nt_ - j0);
    kb_.dma_copy(s_.pattern(block_offset(j0 / nc_, k0 / P), {{P, q * kr}, {q * kr, 1}}),
                 ot(all, {j0 - g0, j0 - g0 + q}, {0, kr}));
  }
  return ot;
}

void WtScratch::build(const kernel::Tensor& w, Transposer& tp, int64_t group, int bufs) {
  begin(w, tp, group, bufs);
  for (int64_t n = 0; n < steps(); ++n) step(n);
}

void WtScratch::load(const Tile& dst, int64_t c, int64_t k0, int64_t kbn) {
  const int64_t q = std::min(nc_, nt_ - c * nc_);
  for (int64_t a = 0; a < kbn; a += parts_) {
    const int64_t kr = std::min(parts_, K_ - (k0 + a));
    kb_.dma_copy(
        dst(all, a / parts_, {0, q}, {0, kr}),
        s_.pattern(block_offset(c, (k0 + a) / parts_), {{parts_, q * kr}, {q, kr}, {kr, 1}}));
  }
}

}  // namespace trnsim::ops::lgrad
