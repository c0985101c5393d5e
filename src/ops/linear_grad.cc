// The two gradients of a linear (train_ops.h): dw = x^T dy (and db) and dx = dy w^T.
//
// linear_grad_weight. Tokens are the contraction, so x and dy load as they lie in HBM, tokens
// on the partitions, and no transposes are needed. dw[K, N] is made in groups of PSUM tiles
// [128 rows of K, 512 columns] (kg K tiles x nbk column blocks, half or all of the banks), each
// accumulated over every token in one pass:
//   per pair of token tiles, the group's x columns and dy columns are loaded (or found in
//   SBUF), and each x tile [tokens, 128 K columns] is the stationary for the group's dy blocks
//   (moving); after the last tokens the banks are copied to SBUF (VectorE and ScalarE in turn)
//   and stored as fp32. With two accumulator sets a group's copies overlap the next pass.
// x and dy are streamed per pass, or kept in SBUF whole (dy: or the current column group) when
// they fit, whichever moves the fewest bytes (weighting loads that gather parts of rows by the
// core's slower rate for them): x is otherwise read once per column group, dy once per K
// group. Loads of whole tiles are partition-major (partition p holds consecutive tokens: any
// assignment of tokens to tiles does, as long as x and dy share it), so a load of whole rows is
// one contiguous block.
// db is the column sums of dy: x gets a ones column after its last (an extra row of dw, so
// K + 1 rows), which rides in the last K tile's spare stationary columns (or is a one-column
// tile of its own when K is a multiple of 128); that PSUM row is stored as db.
//
// linear_grad_input. The contraction is over N, which must lie on the partitions of both
// operands: dy^T blocks [128 of N, tokens] are the stationary, w^T blocks [128 of N, K
// columns] the moving, so dx comes out token-major [tokens, K] in PSUM. Both are transposes of
// what HBM holds, made by DMA transposes where the generation has them (NC-v3+: TensorE then
// does matmuls only), else by TensorE transposes of 128 x 128 blocks staged in SBUF as they
// lie in HBM (as linear.cc transposes x; PSUM -> SBUF copies on VectorE and ScalarE in turn).
// Contraction tiles are per split (a tile never straddles two dy tensors). Per block of tb
// tokens and block of up to 1024 columns of K, the accumulators take every contraction tile:
//   - when w^T fits SBUF whole, each K block of it is made once (by the first token block) and
//     dy^T of a token block once per block (double-buffered): the loop is then the forward
//     linear's, two accumulator sets rotating over the token tiles;
//   - otherwise N goes in chunks of nc tiles: each chunk's w^T (and dy^T, unless the token
//     block's fits whole) is made again per token block (per K block), and every token tile's
//     accumulators stay open across the chunks.
// Each job's operands are made one job ahead of its matmuls (with DMA transposes tile by tile,
// dy^T and w^T in turn, so the first matmuls start before the whole set has arrived). The
// epilogue adds dacc (fp32, before rounding) with accumulate and stores dx in the dtype.
#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

using isa::AluOp;
using kernel::all;
using kernel::Tile;

namespace {

constexpr int64_t kBank = 512;  // fp32 columns of one PSUM bank
// Elements one access pattern moves per partition (a DMA's SBUF side; the ISA's limit).
constexpr int64_t kMaxApElements = 65535;
constexpr int kLoadBuffers = 3;  // staged loads in flight
// linear_grad_input: at most 2 banks (1024 columns of K) per K block and 4 token tiles per
// block; TensorE transposes stage 16 tiles of dy and 8 of w at a time.
constexpr int64_t kMaxKBanks = 2, kMaxTokenTiles = 4;
constexpr int64_t kDyStageTiles = 16, kWStageTiles = 8;

int64_t usable_sbuf(const arch::ChipSpec& chip) {
  return chip.core.sbuf.usable_bytes_per_partition > 0 ? chip.core.sbuf.usable_bytes_per_partition
                                                       : chip.core.sbuf.bytes_per_partition;
}

// A run of columns of one split: columns [c0, c0 + n) of dy<split>, [g0, g0 + n) of the
// concatenation (dw's columns, w's columns).
struct Cols {
  int split = 0;
  int64_t c0 = 0, g0 = 0, n = 0;
};

// Each split cut into runs of at most `width` columns, in order.
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

// Validates the shape arguments; returns N (the sum of the splits).
int64_t check_shape(std::string_view op, int64_t tokens, int64_t in,
                    const std::vector<int64_t>& splits) {
  require_range(op, "tokens", tokens, 1, int64_t{1} << 24);
  require_range(op, "in", in, 1, int64_t{1} << 20);
  require_range(op, "splits", static_cast<int64_t>(splits.size()), 1, int64_t{1} << 16);
  int64_t n = 0;
  for (size_t i = 0; i < splits.size(); ++i) {
    require_range(op, fmt::format("splits[{}]", i), splits[i], 1, int64_t{1} << 24);
    n += splits[i];
  }
  require_range(op, "out", n, 1, int64_t{1} << 24);
  return n;
}

// The input tensors dy0, dy1, ... [T, splits[i]].
std::vector<kernel::Tensor> dy_inputs(kernel::KernelBuilder& kb, num::Format dt, int64_t tokens,
                                      const std::vector<int64_t>& splits) {
  std::vector<kernel::Tensor> dys;
  for (size_t i = 0; i < splits.size(); ++i)
    dys.push_back(kb.input(fmt::format("dy{}", i), dt, {tokens, splits[i]}));
  return dys;
}

// Loads rows [t, t + rows) and columns [c0, c0 + n) of the [*, row_len] tensor `src` into
// dst [P, tiles, width] from tile j0 on, at column `off`: row t + 128 j + p to partition p of
// tile j0 + j. The whole tiles in one DMA, a short last tile in another.
void load_rows(kernel::KernelBuilder& kb, const Tile& dst, int64_t j0, const kernel::Tensor& src,
               int64_t row_len, int64_t t, int64_t rows, int64_t c0, int64_t n, int64_t off) {
  const int64_t parts = dst.size(0);
  const int64_t full = rows / parts, rem = rows % parts;
  if (full > 0)
    kb.dma_copy(dst(all, {j0, j0 + full}, {off, off + n}),
                src.pattern(t * row_len + c0, {{parts, row_len}, {full, parts * row_len}, {n, 1}}));
  if (rem > 0)
    kb.dma_copy(dst({0, rem}, j0 + full, {off, off + n}),
                src({t + full * parts, t + rows}, {c0, c0 + n}));
}

// load_rows for a contraction over the tokens, where which token lands in which tile does
// not matter as long as x and dy agree: a chunk of whole tiles goes partition-major (partition
// p holds rows t + p n .. t + p n + n - 1 of the n tiles, one run of HBM per partition, so a
// load of whole rows is one contiguous block), a chunk with a short tile tile by tile.
void load_tokens(kernel::KernelBuilder& kb, const Tile& dst, int64_t j0, const kernel::Tensor& src,
                 int64_t row_len, int64_t t, int64_t rows, int64_t c0, int64_t n, int64_t off) {
  const int64_t parts = dst.size(0);
  if (rows % parts == 0) {
    const int64_t nt = rows / parts;
    kb.dma_copy(dst(all, {j0, j0 + nt}, {off, off + n}),
                src.pattern(t * row_len + c0, {{parts, nt * row_len}, {nt, row_len}, {n, 1}}));
    return;
  }
  for (int64_t j = 0; j * parts < rows; ++j) {
    const int64_t r = std::min(parts, rows - j * parts);
    kb.dma_copy(dst({0, r}, j0 + j, {off, off + n}),
                src({t + j * parts, t + j * parts + r}, {c0, c0 + n}));
  }
}

// ---------------------------------------------------------------- weight gradient

// Where an operand of the weight gradient comes from: staged per load (read again by every
// pass that needs it), whole in SBUF (loaded once, WeightPlan::whole_rows says when), or (dy)
// the current column group's columns in SBUF (loaded by the group's first pass).
enum class Res : uint8_t { kStream, kWhole, kGroup };

struct WeightPlan {
  int64_t kt = 0;            // K tiles of the augmented K (K + 1 with a bias: the ones column)
  std::vector<Cols> blocks;  // column blocks of dw (one PSUM bank each)
  int64_t kg = 0, nbk = 0;   // K tiles and column blocks per group
  int64_t sets = 1;          // accumulator sets (two: a group's evacuation overlaps the next)
  int64_t tc = 2;            // token tiles per load
  Res x = Res::kStream, dy = Res::kStream;
  // Whole operands load as whole rows in the first pass where gathering parts of rows is
  // slower (one block per load), else by the columns each pass needs first, so that the loads
  // spread over the passes instead of all falling on the first.
  bool whole_rows = false;
};

WeightPlan weight_plan(const arch::ChipSpec& chip, const LinearGradWeightSpec& s, int64_t n) {
  const int64_t parts = chip.core.sbuf.partitions, banks = chip.core.psum.banks;
  const int64_t e = s.dtype.storage_bytes, K = s.in;
  const int64_t tiles = ceil_div(s.tokens, parts);
  WeightPlan best;
  best.kt = ceil_div(K + (s.bias ? 1 : 0), parts);
  best.blocks = split_cols(s.splits, kBank);
  const auto nblk = static_cast<int64_t>(best.blocks.size());
  // Two token tiles per load: a short wait for the first, and the descriptor generation of a
  // DMA (~600 ns from NC-v3 on) well under the matmuls of two tiles.
  const int64_t tc = std::min<int64_t>(2, tiles);
  // A load that gathers part of each row costs the core's gathered-rows rate where it has one
  // (NC-v2: 105 against 272 GB/s for whole rows, docs/timing.md "DMA").
  const auto& dma = chip.core.dma;
  const double gathered = dma.core_bandwidth_gbps && dma.core_block_bandwidth_gbps
                              ? *dma.core_block_bandwidth_gbps / *dma.core_bandwidth_gbps
                              : 1.0;
  best.whole_rows = gathered > 1.0;
  const int64_t room = usable_sbuf(chip) * 4 / 5;  // what the plan may take; placement's slack
  double best_cost = -1;
  for (int64_t sets : {2, 1}) {
    const int64_t gb = banks / sets;
    for (int64_t nbk = 1; nbk <= std::min(nblk, gb); ++nbk) {
      const int64_t kg = std::min(best.kt, gb / nbk);
      const int64_t n_ng = ceil_div(nblk, nbk), n_kg = ceil_div(best.kt, kg);
      const int64_t ngw = nbk * kBank;
      const int64_t out = 2 * ngw * 4;
      for (const Res xr : {Res::kStream, Res::kWhole})
        for (const Res dr : {Res::kStream, Res::kWhole, Res::kGroup}) {
          const int64_t x_bytes =
              xr == Res::kWhole ? tiles * best.kt * parts * e : kLoadBuffers * tc * kg * parts * e;
          const int64_t dy_bytes = dr == Res::kWhole   ? tiles * n * e
                                   : dr == Res::kGroup ? 2 * tiles * ngw * e
                                                       : kLoadBuffers * tc * ngw * e;
          if (out + x_bytes + dy_bytes > room) continue;
          if (xr == Res::kWhole && tc * best.kt * parts > kMaxApElements) continue;
          if (dr == Res::kWhole && tc * n > kMaxApElements) continue;
          // Bytes moved, those gathering parts of rows weighted by their slower rate.
          const double xb = static_cast<double>(s.tokens * K * e);
          const double dyb = static_cast<double>(s.tokens * n * e);
          const double x_cost = xr == Res::kWhole
                                    ? xb
                                    : xb * static_cast<double>(n_ng) * (n_kg == 1 ? 1.0 : gathered);
          const double dy_reads = dr == Res::kStream ? static_cast<double>(n_kg) : 1.0;
          const double dy_cost =
              dr == Res::kWhole ? dyb : dyb * dy_reads * (n_ng == 1 ? 1.0 : gathered);
          const double dw_cost = static_cast<double>(K * n * 4) * (n_ng == 1 ? 1.0 : gathered);
          const double cost = x_cost + dy_cost + dw_cost;
          // The cheapest; at a tie the first found: two sets, streamed operands (less SBUF).
          if (best_cost >= 0 && cost >= best_cost) continue;
          best_cost = cost;
          best.kg = kg;
          best.nbk = nbk;
          best.sets = sets;
          best.tc = tc;
          best.x = xr;
          best.dy = dr;
        }
    }
  }
  if (best_cost < 0) {  // nothing fits the estimate: the smallest plan, placement may spill
    best.kg = 1;
    best.nbk = 1;
    best.sets = 1;
    best.tc = 1;
  }
  return best;
}

// ---------------------------------------------------------------- input gradient

struct InputPlan {
  bool dma_transpose = false;  // transposes by DMA (else TensorE)
  std::vector<Cols> tiles;     // contraction tiles (128 columns of one split at most)
  int64_t nt = 0;
  int64_t tb = 0, mt = 0;      // token block, its token tiles
  int64_t kbanks = 0;          // PSUM banks (512 columns of K each) per K block
  bool w_res = false;          // w^T whole in SBUF, made once
  bool dy_res = false;         // dy^T of a token block whole in SBUF, made once per block
  int64_t nc = 0, chunks = 1;  // contraction tiles per chunk, chunks
  int64_t avail_banks = 0;     // PSUM banks for the accumulators
};

InputPlan input_plan(const arch::ChipSpec& chip, const LinearGradInputSpec& s) {
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
  // SBUF for the transposed operands: what the results, dacc and the staging leave (90% of it:
  // placement needs some slack).
  int64_t fixed = 2 * kbw * e;
  if (s.accumulate) fixed += 2 * std::min(kMaxTokenTiles, token_tiles) * kbw * e;
  if (!p.dma_transpose)
    fixed += 2 * std::min(p.nt, kDyStageTiles) * parts * e +
             2 * (kbw / parts) * std::min(p.nt, kWStageTiles) * parts * e;
  const int64_t budget = std::max<int64_t>(0, usable_sbuf(chip) - fixed) * 9 / 10;
  const int64_t w_bytes = p.nt * s.in * e;
  const bool w_one_dma = s.in <= kMaxApElements;
  // No chunks: w^T whole and dy^T of two token blocks, the largest block that fits.
  for (int64_t mt = std::min(kMaxTokenTiles, token_tiles); mt >= 1 && w_one_dma; --mt)
    if (w_bytes + 2 * p.nt * mt * parts * e <= budget) {
      p.w_res = p.dy_res = true;
      p.mt = mt;
      p.tb = mt * parts;
      p.nc = p.nt;
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
  return p;
}

}  // namespace

isa::Program linear_grad_weight(const arch::ChipSpec& chip, const LinearGradWeightSpec& s) {
  const int64_t N = check_shape("linear_grad_weight", s.tokens, s.in, s.splits);
  const WeightPlan plan = weight_plan(chip, s, N);
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, K = s.in, Ka = K + (s.bias ? 1 : 0);
  const int64_t kg = plan.kg, nbk = plan.nbk, tc = plan.tc, tiles = ceil_div(T, parts);
  const num::Format dt = s.dtype;

  kernel::KernelBuilder kb(chip);
  const kernel::Tensor x = kb.input("x", dt, {T, K});
  const std::vector<kernel::Tensor> dys = dy_inputs(kb, dt, T, s.splits);
  const kernel::Tensor dw = kb.output("dw", num::fp32(), {K, N});
  const kernel::Tensor db = s.bias ? kb.output("db", num::fp32(), {N}) : kernel::Tensor{};

  const bool x_whole = plan.x == Res::kWhole;
  const Tile x_all = x_whole ? kb.sbuf("x", dt, {parts, tiles, plan.kt * parts}) : Tile{};
  const auto x_bufs = x_whole ? std::vector<Tile>{}
                              : kb.sbuf_buffers("x", dt, {parts, tc, kg * parts}, kLoadBuffers);
  const Tile dy_all = plan.dy == Res::kWhole ? kb.sbuf("dy", dt, {parts, tiles, N}) : Tile{};
  const auto dy_groups = plan.dy == Res::kGroup
                             ? kb.sbuf_buffers("dy", dt, {parts, tiles, nbk * kBank}, 2)
                             : std::vector<Tile>{};
  const auto dy_bufs = plan.dy == Res::kStream
                           ? kb.sbuf_buffers("dy", dt, {parts, tc, nbk * kBank}, kLoadBuffers)
                           : std::vector<Tile>{};
  std::vector<std::vector<std::vector<Tile>>> acc(static_cast<size_t>(plan.sets));
  for (int64_t a = 0; a < plan.sets; ++a)
    for (int64_t k = 0; k < kg; ++k)
      acc[a].push_back(kb.psum_buffers(fmt::format("acc{}_{}_", a, k), num::fp32(), {parts, kBank},
                                       static_cast<int>(nbk)));
  const auto o_bufs = kb.sbuf_buffers("dw", num::fp32(), {parts, nbk * kBank}, 2);
  if (x_whole && s.bias) kb.memset(x_all(all, all, {K, K + 1}), 1.0, isa::Engine::kGpSimd);

  // Loads dy's columns [G0, G1) (the blocks [b0, b1)) of token rows [t0, t0 + rows) into
  // dst from tile j0 on, column G0 at `off`: one DMA per split.
  auto load_dy = [&](const Tile& dst, int64_t j0, int64_t b0, int64_t b1, int64_t t0, int64_t rows,
                     int64_t off) {
    const int64_t G0 = plan.blocks[b0].g0;
    for (int64_t b = b0; b < b1;) {
      int64_t b_end = b + 1;
      while (b_end < b1 && plan.blocks[b_end].split == plan.blocks[b].split) ++b_end;
      const Cols& c = plan.blocks[b];
      const int64_t n = plan.blocks[b_end - 1].c0 + plan.blocks[b_end - 1].n - c.c0;
      load_tokens(kb, dst, j0, dys[static_cast<size_t>(c.split)], s.splits[c.split], t0, rows, c.c0,
                  n, c.g0 - G0 + off);
      b = b_end;
    }
  };

  const auto nblk = static_cast<int64_t>(plan.blocks.size());
  int64_t load_no = 0, out_no = 0, copy_no = 0, pass_no = 0;
  for (int64_t b0 = 0, gi = 0; b0 < nblk; b0 += nbk, ++gi) {
    const int64_t b1 = std::min(nblk, b0 + nbk);
    const int64_t G0 = plan.blocks[b0].g0;
    const int64_t G1 = plan.blocks[b1 - 1].g0 + plan.blocks[b1 - 1].n;
    for (int64_t k0 = 0; k0 < plan.kt; k0 += kg, ++pass_no) {
      const int64_t k1 = std::min(plan.kt, k0 + kg);
      const auto& set = acc[static_cast<size_t>(pass_no % plan.sets)];
      const bool first_pass = pass_no == 0;
      const int64_t xcols = std::min(K, k1 * parts) - k0 * parts;  // > 0: K tiles hold x rows
      const bool ones = s.bias && K < k1 * parts;                  // the ones column is here
      for (int64_t j0 = 0; j0 < tiles; j0 += tc) {
        const int64_t t0 = j0 * parts, rows = std::min(tc * parts, T - t0);
        const int64_t n_tiles = ceil_div(rows, parts);
        const size_t buf = static_cast<size_t>(load_no++ % kLoadBuffers);
        // The x tile [tokens, 128 K columns] of token tile j and K tile k.
        Tile xs;
        if (!x_whole) {
          xs = x_bufs[buf];
          if (xcols > 0) load_tokens(kb, xs, 0, x, K, t0, rows, k0 * parts, xcols, 0);
          if (ones)
            kb.memset(xs(all, {0, n_tiles}, {K - k0 * parts, K - k0 * parts + 1}), 1.0,
                      isa::Engine::kGpSimd);
        } else if (plan.whole_rows ? first_pass : gi == 0 && xcols > 0) {
          const int64_t c0 = plan.whole_rows ? 0 : k0 * parts;
          load_tokens(kb, x_all, j0, x, K, t0, rows, c0, plan.whole_rows ? K : xcols, c0);
        }
        auto x_tile = [&](int64_t j, int64_t p, int64_t k, int64_t kr) {
          return x_whole ? x_all({0, p}, j, {k * parts, k * parts + kr})
                         : xs({0, p}, j - j0, {(k - k0) * parts, (k - k0) * parts + kr});
        };
        // Where dy's blocks of token tile j are, and block b's column there.
        Tile ds;
        int64_t ds_j0 = 0, ds_off = -G0;
        if (plan.dy == Res::kWhole) {
          ds = dy_all;
          ds_off = 0;
          if (plan.whole_rows ? first_pass : k0 == 0)
            load_dy(ds, j0, plan.whole_rows ? 0 : b0, plan.whole_rows ? nblk : b1, t0, rows,
                    plan.whole_rows ? 0 : G0);
        } else if (plan.dy == Res::kGroup) {
          ds = dy_groups[static_cast<size_t>(gi % 2)];
          if (k0 == 0) load_dy(ds, j0, b0, b1, t0, rows, 0);
        } else {
          ds = dy_bufs[buf];
          ds_j0 = j0;
          load_dy(ds, 0, b0, b1, t0, rows, 0);
        }
        for (int64_t j = j0; j < j0 + n_tiles; ++j) {
          const int64_t p = std::min(parts, T - j * parts);
          const kernel::MatmulOpts first{.start = j == 0};
          for (int64_t k = k0; k < k1; ++k) {
            const int64_t kr = std::min(parts, Ka - k * parts);
            const Tile stat = x_tile(j, p, k, kr);
            for (int64_t b = b0; b < b1; ++b) {
              const Cols& c = plan.blocks[b];
              kb.matmul(set[k - k0][b - b0]({0, kr}, {0, c.n}), stat,
                        ds({0, p}, j - ds_j0, {c.g0 + ds_off, c.g0 + ds_off + c.n}), first);
            }
          }
        }
      }
      // Evacuate the group: PSUM -> SBUF (VectorE and ScalarE in turn), store dw (and db).
      for (int64_t k = k0; k < k1; ++k) {
        const int64_t kr = std::min(parts, Ka - k * parts);
        const int64_t dw_rows = std::min(kr, K - k * parts);  // 0: a tile of only the ones row
        const Tile& ot = o_bufs[static_cast<size_t>(out_no++ % 2)];
        for (int64_t b = b0; b < b1; ++b) {
          const Cols& c = plan.blocks[b];
          const Tile dst = ot({0, kr}, {c.g0 - G0, c.g0 - G0 + c.n});
          const Tile src = set[k - k0][b - b0]({0, kr}, {0, c.n});
          if (copy_no++ % 2 == 0)
            kb.tensor_copy(dst, src);
          else
            kb.activation(dst, src, isa::ActFunc::kCopy);
        }
        if (dw_rows > 0)
          kb.dma_copy(dw({k * parts, k * parts + dw_rows}, {G0, G1}),
                      ot({0, dw_rows}, {0, G1 - G0}));
        if (dw_rows < kr) kb.dma_copy(db({G0, G1}), ot({dw_rows, kr}, {0, G1 - G0}));
      }
    }
  }
  return kb.build();
}

isa::Program linear_grad_input(const arch::ChipSpec& chip, const LinearGradInputSpec& s) {
  const int64_t N = check_shape("linear_grad_input", s.tokens, s.in, s.splits);
  const InputPlan plan = input_plan(chip, s);
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, K = s.in;
  const int64_t nt = plan.nt, tb = plan.tb, mt = plan.mt, nc = plan.nc;
  const int64_t kbw = plan.kbanks * kBank;  // K block width
  const num::Format dt = s.dtype;
  const std::vector<Cols>& tiles = plan.tiles;

  kernel::KernelBuilder kb(chip);
  const std::vector<kernel::Tensor> dys = dy_inputs(kb, dt, T, s.splits);
  const kernel::Tensor w = kb.input("w", dt, {K, N});
  const kernel::Tensor dacc = s.accumulate ? kb.input("dacc", dt, {T, K}) : kernel::Tensor{};
  const kernel::Tensor dx = kb.output("dx", dt, {T, K});

  // Transposed operands: the resident ones, else chunk buffers rotating one chunk ahead.
  const Tile w_all = plan.w_res ? kb.sbuf("wT", dt, {parts, nt, K}) : Tile{};
  const auto w_chunks =
      plan.w_res ? std::vector<Tile>{} : kb.sbuf_buffers("wT", dt, {parts, nc, kbw}, kLoadBuffers);
  const auto dy_blocks =
      plan.dy_res ? kb.sbuf_buffers("dyT", dt, {parts, nt, tb}, 2) : std::vector<Tile>{};
  const auto dy_chunks =
      plan.dy_res ? std::vector<Tile>{} : kb.sbuf_buffers("dyT", dt, {parts, nc, tb}, kLoadBuffers);
  // TensorE transposes: rows staged as they lie in HBM, PSUM tiles of a bank.
  const num::Format tdt =
      chip.core.features.bit_exact_transpose && dt.storage_bytes >= 2 ? dt : num::fp32();
  const int64_t per_bank =
      std::max<int64_t>(1, chip.core.psum.bank_bytes / (parts * tdt.storage_bytes));
  std::vector<Tile> tp_bufs, dy_stage, w_stage;
  if (!plan.dma_transpose) {
    tp_bufs = kb.psum_buffers("T_psum", tdt, {parts, per_bank, parts}, 2);
    dy_stage = kb.sbuf_buffers("dy", dt, {parts, std::min(nt, kDyStageTiles) * parts}, 2);
    w_stage = kb.sbuf_buffers(
        "w", dt, {parts, plan.kbanks * kBank / parts, std::min(nt, kWStageTiles) * parts}, 2);
  }
  // Accumulators: two sets rotating over the token tiles without chunks, else one per token
  // tile of the block (open across the chunks).
  const int64_t acc_sets = plan.chunks == 1 ? 2 : mt;
  std::vector<std::vector<Tile>> acc;
  for (int64_t i = 0; i < acc_sets; ++i)
    acc.push_back(kb.psum_buffers(fmt::format("acc{}_", i), num::fp32(), {parts, kBank},
                                  static_cast<int>(plan.kbanks)));
  const auto o_bufs = kb.sbuf_buffers("dx", dt, {parts, kbw}, 2);
  const auto da_bufs =
      s.accumulate ? kb.sbuf_buffers("dacc", dt, {parts, mt, kbw}, 2) : std::vector<Tile>{};

  int64_t tp_no = 0, stage_no = 0, copy_no = 0;
  auto next_tp = [&]() -> const Tile& { return tp_bufs[static_cast<size_t>(tp_no++ % 2)]; };
  // PSUM -> SBUF copies of transposes, VectorE and ScalarE in turn.
  auto copy_out = [&](const Tile& dst, const Tile& src) {
    if (copy_no++ % 2 == 0)
      kb.tensor_copy(dst, src);
    else
      kb.activation(dst, src, isa::ActFunc::kCopy);
  };

  // dy^T of tiles [j0, j1) and tokens [t0, t0 + tbn) into dst [P, *, tb] from tile jb on.
  auto make_dyT = [&](const Tile& dst, int64_t jb, int64_t j0, int64_t j1, int64_t t0,
                      int64_t tbn) {
    if (plan.dma_transpose) {
      for (int64_t j = j0; j < j1; ++j) {
        const Cols& c = tiles[j];
        kb.dma_transpose(dst({0, c.n}, j - jb, {0, tbn}),
                         dys[static_cast<size_t>(c.split)]({t0, t0 + tbn}, {c.c0, c.c0 + c.n}));
      }
      return;
    }
    // Runs of tiles of one split, staged per token tile and transposed in 128 x 128 blocks.
    for (int64_t r0 = j0; r0 < j1;) {
      int64_t r1 = r0 + 1;
      while (r1 < j1 && r1 - r0 < kDyStageTiles && tiles[r1].split == tiles[r0].split) ++r1;
      const Cols& first = tiles[r0];
      const int64_t cols = tiles[r1 - 1].c0 + tiles[r1 - 1].n - first.c0;
      for (int64_t m0 = 0; m0 < tbn; m0 += parts) {
        const int64_t p = std::min(parts, tbn - m0);
        const Tile& st = dy_stage[static_cast<size_t>(stage_no++ % 2)];
        kb.dma_copy(st({0, p}, {0, cols}),
                    dys[static_cast<size_t>(first.split)]({t0 + m0, t0 + m0 + p},
                                                          {first.c0, first.c0 + cols}));
        for (int64_t j = r0; j < r1;) {
          // Full tiles share a PSUM tile and one copy; a short tile is alone.
          int64_t g = 1;
          while (tiles[j].n == parts && g < per_bank && j + g < r1 && tiles[j + g].n == parts) ++g;
          const int64_t nr = tiles[j].n;
          const Tile& tp = next_tp();
          for (int64_t q = 0; q < g; ++q) {
            const int64_t off = tiles[j + q].c0 - first.c0;
            kb.transpose(tp({0, nr}, q, {0, p}), st({0, p}, {off, off + nr}));
          }
          copy_out(dst({0, nr}, {j - jb, j - jb + g}, {m0, m0 + p}), tp({0, nr}, {0, g}, {0, p}));
          j += g;
        }
      }
      r0 = r1;
    }
  };
  // w^T of tiles [j0, j1) and K columns [k0, k0 + kbn) into dst [P, *, *] from tile jb on,
  // at column `cb`.
  auto make_wT = [&](const Tile& dst, int64_t jb, int64_t cb, int64_t j0, int64_t j1, int64_t k0,
                     int64_t kbn) {
    if (plan.dma_transpose) {
      for (int64_t j = j0; j < j1; ++j) {
        const Cols& c = tiles[j];
        kb.dma_transpose(dst({0, c.n}, j - jb, {cb, cb + kbn}),
                         w({k0, k0 + kbn}, {c.g0, c.g0 + c.n}));
      }
      return;
    }
    // w rows staged K tile by K tile ([128 rows of K, tiles, columns]), transposed per block.
    for (int64_t ka = k0; ka < k0 + kbn; ka += kbw) {
      const int64_t kn = std::min(kbw, k0 + kbn - ka);
      const int64_t kts = ceil_div(kn, parts);
      for (int64_t r0 = j0; r0 < j1; r0 += kWStageTiles) {
        const int64_t r1 = std::min(j1, r0 + kWStageTiles);
        const int64_t G0 = tiles[r0].g0, cols = tiles[r1 - 1].g0 + tiles[r1 - 1].n - G0;
        const Tile& st = w_stage[static_cast<size_t>(stage_no++ % 2)];
        // One DMA per K tile: each a block of whole rows when the run is all of N.
        for (int64_t r = 0; r < kts; ++r) {
          const int64_t kr = std::min(parts, kn - r * parts);
          kb.dma_copy(st({0, kr}, r, {0, cols}),
                      w({ka + r * parts, ka + r * parts + kr}, {G0, G0 + cols}));
        }
        for (int64_t j = r0; j < r1; ++j) {
          const int64_t nr = tiles[j].n, off = tiles[j].g0 - G0;
          for (int64_t r = 0; r < kts;) {
            const int64_t kr = std::min(parts, kn - r * parts);
            int64_t g = 1;
            while (kr == parts && g < per_bank && r + g < kts && kn - (r + g) * parts >= parts) ++g;
            const Tile& tp = next_tp();
            for (int64_t q = 0; q < g; ++q)
              kb.transpose(tp({0, nr}, q, {0, kr}), st({0, kr}, r + q, {off, off + nr}));
            const int64_t c = cb + (ka - k0) + r * parts;
            copy_out(dst({0, nr}, j - jb, {c, c + g * kr}).reshape({nr, g, kr}),
                     tp({0, nr}, {0, g}, {0, kr}));
            r += g;
          }
        }
      }
    }
  };

  // The work: one job per (token block, K block, chunk).
  struct Job {
    int64_t blk, t0, tbn, k0, kbn, chunk, j0, j1;
  };
  std::vector<Job> jobs;
  for (int64_t t0 = 0, blk = 0; t0 < T; t0 += tb, ++blk)
    for (int64_t k0 = 0; k0 < K; k0 += kbw)
      for (int64_t c = 0; c < plan.chunks; ++c)
        jobs.push_back({blk, t0, std::min(tb, T - t0), k0, std::min(kbw, K - k0), c, c * nc,
                        std::min(nt, (c + 1) * nc)});
  auto unit_of = [&](size_t i) { return static_cast<int64_t>(i) / plan.chunks; };

  // Job i's operands: dy^T (of the token block when resident, made by its first job, else of
  // the chunk) and w^T (when resident, each K block's made by the first job that uses it, else
  // the chunk's); with DMA transposes tile by tile, dy^T and w^T in turn.
  auto prepare = [&](size_t i) {
    const Job& jb = jobs[i];
    const bool dy_new = !plan.dy_res || (jb.k0 == 0 && jb.chunk == 0);
    const bool w_new = !plan.w_res || (jb.blk == 0 && jb.chunk == 0);
    const Tile& dyd =
        plan.dy_res ? dy_blocks[static_cast<size_t>(jb.blk % 2)] : dy_chunks[i % kLoadBuffers];
    const Tile& wd = plan.w_res ? w_all : w_chunks[i % kLoadBuffers];
    const int64_t dy_j0 = plan.dy_res ? 0 : jb.j0, dy_j1 = plan.dy_res ? nt : jb.j1;
    const int64_t w_j0 = plan.w_res ? 0 : jb.j0, w_j1 = plan.w_res ? nt : jb.j1;
    const int64_t step = plan.dma_transpose ? 1 : nt;
    for (int64_t j = std::min(dy_j0, w_j0); j < std::max(dy_j1, w_j1); j += step) {
      if (dy_new && j < dy_j1 && j + step > dy_j0)
        make_dyT(dyd, dy_j0, std::max(j, dy_j0), std::min(j + step, dy_j1), jb.t0, jb.tbn);
      if (w_new && j < w_j1 && j + step > w_j0)
        make_wT(wd, w_j0, plan.w_res ? jb.k0 : 0, std::max(j, w_j0), std::min(j + step, w_j1),
                jb.k0, jb.kbn);
    }
    if (s.accumulate && jb.chunk == 0) {
      // One DMA per token tile: a block of whole rows when the K block is all of K.
      const Tile& da = da_bufs[static_cast<size_t>(unit_of(i) % 2)];
      for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts)
        load_rows(kb, da, m0 / parts, dacc, K, jb.t0 + m0, std::min(parts, jb.tbn - m0), jb.k0,
                  jb.kbn, 0);
    }
  };
  int64_t acc_no = 0, out_no = 0;
  // dx of token tile m0 of job `jb` from accumulator set `set` (+ dacc), stored.
  auto epilogue = [&](size_t i, size_t set, int64_t m0) {
    const Job& jb = jobs[i];
    const int64_t p = std::min(parts, jb.tbn - m0);
    const Tile& ot = o_bufs[static_cast<size_t>(out_no++ % 2)];
    for (int64_t b = 0; b * kBank < jb.kbn; ++b) {
      const int64_t c0 = b * kBank, c1 = std::min(jb.kbn, c0 + kBank);
      const Tile a = acc[set][static_cast<size_t>(b)]({0, p}, {0, c1 - c0});
      if (s.accumulate)
        kb.tensor_tensor(ot({0, p}, {c0, c1}), a,
                         da_bufs[static_cast<size_t>(unit_of(i) % 2)]({0, p}, m0 / parts, {c0, c1}),
                         AluOp::kAdd);
      else
        kb.activation(ot({0, p}, {c0, c1}), a, isa::ActFunc::kCopy);
    }
    kb.dma_copy(dx({jb.t0 + m0, jb.t0 + m0 + p}, {jb.k0, jb.k0 + jb.kbn}), ot({0, p}, {0, jb.kbn}));
  };

  if (!jobs.empty()) prepare(0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i + 1 < jobs.size()) prepare(i + 1);
    const Job& jb = jobs[i];
    const Tile& dT =
        plan.dy_res ? dy_blocks[static_cast<size_t>(jb.blk % 2)] : dy_chunks[i % kLoadBuffers];
    const int64_t djb = plan.dy_res ? 0 : jb.j0;
    const Tile& wT = plan.w_res ? w_all : w_chunks[i % kLoadBuffers];
    const int64_t wjb = plan.w_res ? 0 : jb.j0, wcb = plan.w_res ? jb.k0 : 0;
    auto matmuls = [&](size_t set, int64_t m0, int64_t p) {
      for (int64_t j = jb.j0; j < jb.j1; ++j) {
        const int64_t nr = tiles[j].n;
        const Tile stat = dT({0, nr}, j - djb, {m0, m0 + p});
        for (int64_t b = 0; b * kBank < jb.kbn; ++b) {
          const int64_t c0 = b * kBank, c1 = std::min(jb.kbn, c0 + kBank);
          kb.matmul(acc[set][static_cast<size_t>(b)]({0, p}, {0, c1 - c0}), stat,
                    wT({0, nr}, j - wjb, {wcb + c0, wcb + c1}), {.start = j == 0});
        }
      }
    };
    if (plan.chunks == 1) {
      for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts) {
        const auto set = static_cast<size_t>(acc_no++ % 2);
        matmuls(set, m0, std::min(parts, jb.tbn - m0));
        epilogue(i, set, m0);
      }
      continue;
    }
    for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts)
      matmuls(static_cast<size_t>(m0 / parts), m0, std::min(parts, jb.tbn - m0));
    if (jb.chunk == plan.chunks - 1)
      for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts)
        epilogue(i, static_cast<size_t>(m0 / parts), m0);
  }
  return kb.build();
}

}  // namespace trnsim::ops
