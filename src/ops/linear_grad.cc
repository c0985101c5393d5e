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
// what HBM holds, made by DMA transposes where the generation has them (NC-v3+), else by
// TensorE transposes of 128 x 128 blocks staged in SBUF as they lie in HBM (as linear.cc
// transposes x; PSUM -> SBUF copies on VectorE and ScalarE in turn). Contraction tiles are per
// split (a tile never straddles two dy tensors). Per block of tokens and block of up to 1024
// columns of K, the accumulators take every contraction tile. The plan (linear_grad_wt.h) says
// where w^T comes from:
//   - when w^T fits SBUF whole, each K block of it is made once (by the first token block) and
//     dy^T of a token block once per block (double-buffered): the loop is then the forward
//     linear's, two accumulator sets rotating over the token tiles;
//   - otherwise N goes in chunks of nc tiles, every token tile's accumulators open across
//     them, and each chunk's w^T is
//       made again per token block (per K block), as dy^T is unless the token block's fits;
//       or loaded per job from the HBM scratch a pass fills once, where gathering parts of w's
//       rows makes remaking it slower (NC-v2; the plan estimates both per shape). On this
//       scratch path the token blocks are as even as their count allows and hold as many
//       tiles as the banks do (K blocks of one bank, or two), and dy^T of a token block is
//       kept until its last K block in a ring of chunk buffers: for two blocks, the next
//       block's made per token tile from whole rows, spread over this block's jobs; or for
//       one block and a chunk, each chunk made as soon as its buffer is free. Where SBUF
//       allows, the pass runs beside the first token block, whose jobs (K blocks of one K
//       tile, rotating over the quarters of the banks) take w^T from the pass's buffers
//       (with a single token block nothing is written).
// Operands are made one job ahead of their matmuls (with DMA transposes tile by tile, dy^T and
// w^T in turn, so the first matmuls start before the whole set has arrived); on the scratch
// path every load is emitted right after what frees its buffer (the load queue is in order),
// w^T blocks some microseconds of matmuls ahead. The epilogue adds dacc (fp32, before
// rounding) with accumulate and stores dx in the dtype.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/linear_grad_wt.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

using isa::AluOp;
using kernel::all;
using kernel::Tile;
using lgrad::Cols;
using lgrad::InputPlan;
using lgrad::kBank;
using lgrad::kLoadBuffers;
using lgrad::kMaxApElements;
using lgrad::kScratchOut;
using lgrad::kWStageTiles;
using lgrad::split_cols;
using lgrad::usable_sbuf;

namespace {

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
  const InputPlan plan = lgrad::input_plan(chip, s);
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, K = s.in;
  const int64_t nt = plan.nt, tb = plan.tb, mt = plan.mt, nc = plan.nc, chunks = plan.chunks;
  const int64_t kbw = plan.kbanks * kBank;  // K block width
  const num::Format dt = s.dtype;
  const std::vector<Cols>& tiles = plan.tiles;

  kernel::KernelBuilder kb(chip);
  const std::vector<kernel::Tensor> dys = dy_inputs(kb, dt, T, s.splits);
  const kernel::Tensor w = kb.input("w", dt, {K, N});
  const kernel::Tensor dacc = s.accumulate ? kb.input("dacc", dt, {T, K}) : kernel::Tensor{};
  const kernel::Tensor dx = kb.output("dx", dt, {T, K});

  // TensorE transposes: dy^T's without DMA transposes, w^T's per job or in the scratch pass.
  std::optional<lgrad::Transposer> tp;
  // The scratch path's transposes take the banks the accumulators leave (up to four).
  const int64_t acc_sets = chunks == 1 ? 2 : mt;
  const int64_t tp_bufs =
      plan.w_scratch ? std::clamp<int64_t>(chip.core.psum.banks - acc_sets * plan.kbanks, 2, 4) : 2;
  if (!plan.dma_transpose || plan.w_scratch) tp.emplace(kb, dt, static_cast<int>(tp_bufs));
  // Token blocks: of tb tokens but the last; on the scratch path, whose every block streams
  // all of w^T, of as even a number of token tiles as the same count of blocks allows.
  const int64_t token_tiles = ceil_div(T, parts), blocks = ceil_div(token_tiles, mt);
  // The scratch pass comes first: each load of w^T then waits only for its own block. (A fused
  // first block that is the only one needs no scratch.)
  const bool streams = plan.w_scratch && (!plan.fuse0 || blocks > 1);
  std::optional<lgrad::WtScratch> wts;
  if (plan.w_scratch) {
    wts.emplace(kb, tiles, K, nc, dt, streams);
    if (plan.fuse0)
      wts->begin(w, *tp, plan.pass_group, plan.pass_bufs);
    else
      wts->build(w, *tp, plan.pass_group, plan.pass_bufs);
  }

  // Transposed operands: the resident ones, else chunk buffers rotating one chunk ahead (the
  // ring: every chunk of a token block's dy^T until its last K block). w^T from the scratch is
  // laid out K tile by K tile ([P, K tiles, nc, 128]: each tile's load writes one run of every
  // partition, so the loads of a job do not wait for each other); a short last K tile's
  // columns are padded, zeroed once (their products fall in PSUM columns nobody reads).
  const Tile w_all = plan.w_res ? kb.sbuf("wT", dt, {parts, nt, K}) : Tile{};
  std::vector<Tile> w_chunks;
  if (streams) {
    w_chunks =
        kb.sbuf_buffers("wT", dt, {parts, kbw / parts, nc, parts}, static_cast<int>(plan.wbufs));
    if (K % parts != 0)
      for (const Tile& t : w_chunks)
        kb.memset(t(all, (K - 1) % kbw / parts, all, {K % parts, parts}), 0.0,
                  isa::Engine::kGpSimd);
  } else if (!plan.w_res && !plan.w_scratch) {
    w_chunks = kb.sbuf_buffers("wT", dt, {parts, nc, kbw}, static_cast<int>(plan.wbufs));
  }
  const auto dy_blocks =
      plan.dy_res ? kb.sbuf_buffers("dyT", dt, {parts, nt, tb}, 2) : std::vector<Tile>{};
  const auto dy_chunks =
      plan.dy_res ? std::vector<Tile>{}
                  : kb.sbuf_buffers("dyT", dt, {parts, nc, tb},
                                    static_cast<int>(plan.ring > 0 ? plan.ring : kLoadBuffers));
  // dy's rows staged as they lie in HBM for TensorE transposes.
  std::vector<Tile> dy_stage;
  if (!plan.dma_transpose)
    dy_stage = plan.w_scratch
                   ? kb.sbuf_buffers("dy", dt, {parts, plan.stage_m, plan.stage_tiles * parts},
                                     static_cast<int>(plan.stages))
                   : kb.sbuf_buffers("dy", dt, {parts, plan.stage_tiles * parts}, 2);
  std::optional<lgrad::WtMaker> wm;
  if (!plan.w_scratch)
    wm.emplace(kb, w, tiles, plan.dma_transpose ? nullptr : &*tp, kbw, kWStageTiles);
  // Accumulators: two sets rotating over the token tiles without chunks, else one per token
  // tile of the block (open across the chunks).
  std::vector<std::vector<Tile>> acc;
  for (int64_t i = 0; i < acc_sets; ++i)
    acc.push_back(kb.psum_buffers(fmt::format("acc{}_", i), num::fp32(), {parts, kBank},
                                  static_cast<int>(plan.kbanks)));
  const auto o_bufs = kb.sbuf_buffers("dx", dt, {parts, kbw}, plan.w_scratch ? kScratchOut : 2);
  const auto da_bufs =
      s.accumulate ? kb.sbuf_buffers("dacc", dt, {parts, mt, kbw}, 2) : std::vector<Tile>{};

  int64_t stage_no = 0;
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
      while (r1 < j1 && r1 - r0 < plan.stage_tiles && tiles[r1].split == tiles[r0].split) ++r1;
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
          while (tiles[j].n == parts && g < tp->per_bank() && j + g < r1 && tiles[j + g].n == parts)
            ++g;
          const int64_t nr = tiles[j].n;
          const Tile& pt = tp->next();
          for (int64_t q = 0; q < g; ++q) {
            const int64_t off = tiles[j + q].c0 - first.c0;
            kb.transpose(pt({0, nr}, q, {0, p}), st({0, p}, {off, off + nr}));
          }
          tp->copy_out(dst({0, nr}, {j - jb, j - jb + g}, {m0, m0 + p}),
                       pt({0, nr}, {0, g}, {0, p}));
          j += g;
        }
      }
      r0 = r1;
    }
  };

  // The work: one job per (token block, K block, chunk).
  struct Job {
    int64_t blk, t0, tbn, k0, kbn, chunk, j0, j1;
  };
  std::vector<Job> jobs;
  std::vector<int64_t> blk_t0{0};
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t n =
        plan.w_scratch ? token_tiles / blocks + (b < token_tiles % blocks ? 1 : 0) : mt;
    blk_t0.push_back(std::min(T, blk_t0.back() + n * parts));
  }
  // K blocks of kbw columns; of one K tile in a first block fused with the pass. blk_job0[b]:
  // block b's first job.
  std::vector<int64_t> blk_job0;
  for (int64_t blk = 0; blk < blocks; ++blk) {
    blk_job0.push_back(static_cast<int64_t>(jobs.size()));
    const int64_t kw = plan.fuse0 && blk == 0 ? parts : kbw;
    for (int64_t k0 = 0; k0 < K; k0 += kw)
      for (int64_t c = 0; c < chunks; ++c)
        jobs.push_back({blk, blk_t0[blk], blk_t0[blk + 1] - blk_t0[blk], k0, std::min(kw, K - k0),
                        c, c * nc, std::min(nt, (c + 1) * nc)});
  }
  blk_job0.push_back(static_cast<int64_t>(jobs.size()));
  const bool fused0 = plan.fuse0;
  auto in_fused = [&](size_t i) { return fused0 && jobs[i].blk == 0; };
  auto unit_of = [&](size_t i) { return static_cast<int64_t>(i) / chunks; };

  // The ring: chunk c of token block b's dy^T is in buffer (b chunks + c) mod ring.
  auto ring_buf = [&](int64_t b, int64_t c) -> const Tile& {
    return dy_chunks[static_cast<size_t>((b * chunks + c) % plan.ring)];
  };
  // When the ring's parts are made: by the prepare() of which job (it runs before the
  // matmuls of the job before). A chunk as soon as the buffer's last reader (the chunk it held
  // before, in its block's last K block) is two jobs back, at the latest by its first job;
  // per token tile (dy_by_token), spread evenly over the previous block's jobs.
  // A part is made in windows: tiles of one split, at most stage_tiles; with TensorE
  // transposes each window's rows (of the part's token tiles) are staged by one load, emitted
  // right after the transposes of the window whose staging buffer it takes (so the in-order
  // load queue never waits behind a buffer that frees later).
  struct Window {
    int64_t b, m0, m1, a0, a1;
  };
  std::vector<Window> windows;
  std::vector<std::pair<size_t, size_t>> win_at(plan.ring > 0 ? jobs.size() : 0);  // [first, end)
  if (plan.ring > 0) {
    std::vector<std::vector<Window>> parts_at(jobs.size());
    auto job_of = [&](int64_t b, int64_t kbi, int64_t c) {
      return blk_job0[static_cast<size_t>(b)] + kbi * chunks + c;
    };
    auto last_kb = [&](int64_t b) {
      return (blk_job0[static_cast<size_t>(b) + 1] - blk_job0[static_cast<size_t>(b)]) / chunks - 1;
    };
    auto add = [&](int64_t at, int64_t b, int64_t m0, int64_t m1, int64_t j0, int64_t j1) {
      for (int64_t a0 = j0; a0 < j1;) {
        int64_t a1 = a0 + 1;
        while (a1 < j1 && (plan.dma_transpose || a1 - a0 < plan.stage_tiles) &&
               tiles[a1].split == tiles[a0].split)
          ++a1;
        parts_at[static_cast<size_t>(at)].push_back({b, m0, m1, a0, a1});
        a0 = a1;
      }
    };
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t bt = ceil_div(blk_t0[b + 1] - blk_t0[b], parts);
      if (plan.dy_by_token && b > 0) {
        const int64_t j0 = blk_job0[static_cast<size_t>(b) - 1];
        const int64_t per_block = blk_job0[static_cast<size_t>(b)] - j0;
        for (int64_t m = 0; m < bt; ++m) add(j0 + 1 + m * per_block / bt, b, m, m + 1, 0, nt);
        continue;
      }
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t first = job_of(b, 0, c), before = b * chunks + c - plan.ring;
        const int64_t at =
            before < 0
                ? first
                : std::min(first,
                           job_of(before / chunks, last_kb(before / chunks), before % chunks) + 2);
        // (The staging of dy_by_token holds one token tile.)
        for (int64_t m = 0; m < bt; m += plan.stage_m)
          add(at, b, m, std::min(bt, m + plan.stage_m), c * nc, std::min(nt, (c + 1) * nc));
      }
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      win_at[i].first = windows.size();
      windows.insert(windows.end(), parts_at[i].begin(), parts_at[i].end());
      win_at[i].second = windows.size();
    }
  }
  auto stage_load = [&](size_t wi) {
    if (plan.dma_transpose || wi >= windows.size()) return;
    const Window& wd = windows[wi];
    const int64_t t0 = blk_t0[wd.b], tbn = blk_t0[wd.b + 1] - t0;
    const Cols& first = tiles[wd.a0];
    const int64_t cols = tiles[wd.a1 - 1].c0 + tiles[wd.a1 - 1].n - first.c0;
    const int64_t r0 = wd.m0 * parts, r1 = std::min(tbn, wd.m1 * parts);
    load_rows(kb, dy_stage[wi % dy_stage.size()], 0, dys[static_cast<size_t>(first.split)],
              s.splits[first.split], t0 + r0, r1 - r0, first.c0, cols, 0);
  };
  // Window wi's dy^T into the ring (from its staged rows, transposed per token tile and
  // 128 x 128 block, or by DMA transposes).
  auto make_window = [&](size_t wi) {
    const Window& wd = windows[wi];
    const int64_t t0 = blk_t0[wd.b], tbn = blk_t0[wd.b + 1] - t0;
    if (plan.dma_transpose) {
      const int64_t r0 = wd.m0 * parts, r1 = std::min(tbn, wd.m1 * parts);
      for (int64_t j = wd.a0; j < wd.a1; ++j) {
        const Cols& c = tiles[j];
        kb.dma_transpose(ring_buf(wd.b, j / nc)({0, c.n}, j % nc, {r0, r1}),
                         dys[static_cast<size_t>(c.split)]({t0 + r0, t0 + r1}, {c.c0, c.c0 + c.n}));
      }
      return;
    }
    const Tile& st = dy_stage[wi % dy_stage.size()];
    const Cols& first = tiles[wd.a0];
    if (wd.m1 - wd.m0 > 1) {
      // Several token tiles (a chunk's part): full token tiles of one contraction tile share a
      // PSUM tile and one copy (consecutive tokens of the ring buffer); a short one is alone.
      for (int64_t j = wd.a0; j < wd.a1; ++j) {
        const int64_t nr = tiles[j].n, off = tiles[j].c0 - first.c0;
        for (int64_t m = wd.m0; m < wd.m1;) {
          const int64_t p = std::min(parts, tbn - m * parts);
          int64_t g = 1;
          while (p == parts && g < tp->per_bank() && m + g < wd.m1 &&
                 tbn - (m + g) * parts >= parts)
            ++g;
          const Tile& pt = tp->next();
          for (int64_t q = 0; q < g; ++q)
            kb.transpose(pt({0, nr}, q, {0, p}), st({0, p}, m + q - wd.m0, {off, off + nr}));
          tp->copy_out(ring_buf(wd.b, j / nc)({0, nr}, j % nc, {m * parts, m * parts + g * p})
                           .reshape({nr, g, p}),
                       pt({0, nr}, {0, g}, {0, p}));
          m += g;
        }
      }
      stage_load(wi + dy_stage.size());
      return;
    }
    // One token tile: full contraction tiles of one chunk share a PSUM tile and one copy; a
    // short tile is alone.
    const int64_t m = wd.m0, p = std::min(parts, tbn - m * parts);
    for (int64_t j = wd.a0; j < wd.a1;) {
      int64_t g = 1;
      while (tiles[j].n == parts && g < tp->per_bank() && j + g < wd.a1 &&
             tiles[j + g].n == parts && (j + g) / nc == j / nc)
        ++g;
      const int64_t nr = tiles[j].n;
      const Tile& pt = tp->next();
      for (int64_t q = 0; q < g; ++q) {
        const int64_t off = tiles[j + q].c0 - first.c0;
        kb.transpose(pt({0, nr}, q, {0, p}), st({0, p}, 0, {off, off + nr}));
      }
      tp->copy_out(
          ring_buf(wd.b, j / nc)({0, nr}, {j % nc, j % nc + g}, {m * parts, m * parts + p}),
          pt({0, nr}, {0, g}, {0, p}));
      j += g;
    }
    stage_load(wi + dy_stage.size());
  };

  // w^T from the scratch: job i's block into buffer (i - first_loaded) mod wbufs, loaded once
  // the pass is complete (in program order) and the buffer's job before is done.
  const size_t first_loaded = fused0 ? static_cast<size_t>(blk_job0[1]) : 0;
  size_t loaded = first_loaded;
  bool pass_done = !fused0;
  auto wbuf = [&](size_t i) -> const Tile& {
    return w_chunks[(i - first_loaded) % w_chunks.size()];
  };
  auto load_wT = [&](size_t upto) {  // every job before `upto`
    for (; pass_done && loaded < std::min(upto, jobs.size()); ++loaded)
      wts->load(wbuf(loaded), jobs[loaded].chunk, jobs[loaded].k0, jobs[loaded].kbn);
  };
  // A fused first block's w^T: the pass's transposed buffer of each K tile.
  std::vector<const Tile*> pass_out(fused0 ? static_cast<size_t>(wts->steps()) : 0);

  // Job i's operands: dy^T (of the token block when resident, made by its first job, else of
  // the chunk; the ring's parts due) and w^T (when resident, each K block's made by the first
  // job that uses it, else the chunk's; from the scratch, loaded two jobs ahead by the loop);
  // with DMA transposes tile by tile, dy^T and w^T in turn.
  auto prepare = [&](size_t i) {
    const Job& jb = jobs[i];
    if (plan.ring > 0) {
      for (size_t wi = win_at[i].first; wi < win_at[i].second; ++wi) make_window(wi);
      if (in_fused(i) && jb.chunk == 0) {
        // The pass's step for this K tile (its group is all of N).
        const int64_t kt = jb.k0 / parts;
        pass_out[static_cast<size_t>(kt)] = &wts->step(kt);
        if (kt + 1 == wts->steps()) pass_done = true;
      }
    } else {
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
          wm->make(wd, w_j0, plan.w_res ? jb.k0 : 0, std::max(j, w_j0), std::min(j + step, w_j1),
                   jb.k0, jb.kbn);
      }
    }
    if (s.accumulate && jb.chunk == 0) {
      // One DMA per token tile: a block of whole rows when the K block is all of K.
      const Tile& da = da_bufs[static_cast<size_t>(unit_of(i) % 2)];
      for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts)
        load_rows(kb, da, m0 / parts, dacc, K, jb.t0 + m0, std::min(parts, jb.tbn - m0), jb.k0,
                  jb.kbn, 0);
    }
  };
  // The accumulators' columns: a fused first block's K tiles take the four quarters of their
  // banks in turn (a K tile's matmuls do not wait for the epilogue of the one before).
  auto acc_col = [&](size_t i) {
    return in_fused(i) ? jobs[i].k0 / parts % (kBank / parts) * parts : int64_t{0};
  };
  int64_t acc_no = 0, out_no = 0;
  // dx of token tile m0 of job `jb` from accumulator set `set` (+ dacc), stored.
  auto epilogue = [&](size_t i, size_t set, int64_t m0) {
    const Job& jb = jobs[i];
    const int64_t p = std::min(parts, jb.tbn - m0);
    const Tile& ot = o_bufs[static_cast<size_t>(out_no++) % o_bufs.size()];
    for (int64_t b = 0; b * kBank < jb.kbn; ++b) {
      const int64_t c0 = b * kBank, c1 = std::min(jb.kbn, c0 + kBank);
      const Tile a = acc[set][static_cast<size_t>(b)]({0, p}, {acc_col(i), acc_col(i) + c1 - c0});
      if (s.accumulate)
        kb.tensor_tensor(ot({0, p}, {c0, c1}), a,
                         da_bufs[static_cast<size_t>(unit_of(i) % 2)]({0, p}, m0 / parts, {c0, c1}),
                         AluOp::kAdd);
      else
        kb.activation(ot({0, p}, {c0, c1}), a, isa::ActFunc::kCopy);
    }
    kb.dma_copy(dx({jb.t0 + m0, jb.t0 + m0 + p}, {jb.k0, jb.k0 + jb.kbn}), ot({0, p}, {0, jb.kbn}));
  };

  // The scratch path's loads, each emitted right after what frees its buffer: the first
  // stagings and w^T blocks here, then a w^T block after the matmuls of the job that last used
  // its buffer, a staging after the transposes of the window before in its buffer.
  if (plan.w_scratch) {
    for (size_t wi = 0; wi < dy_stage.size(); ++wi) stage_load(wi);
    load_wT(first_loaded + w_chunks.size());
  }
  if (!jobs.empty()) prepare(0);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i + 1 < jobs.size()) prepare(i + 1);
    const Job& jb = jobs[i];
    const Tile& dT = plan.dy_res ? dy_blocks[static_cast<size_t>(jb.blk % 2)]
                     : plan.ring ? ring_buf(jb.blk, jb.chunk)
                                 : dy_chunks[i % kLoadBuffers];
    const int64_t djb = plan.dy_res ? 0 : jb.j0;
    const bool fj = in_fused(i);
    const Tile& wT = plan.w_res       ? w_all
                     : fj             ? *pass_out[static_cast<size_t>(jb.k0 / parts)]
                     : plan.w_scratch ? wbuf(i)
                                      : w_chunks[i % w_chunks.size()];
    const int64_t wjb = plan.w_res ? 0 : jb.j0, wcb = plan.w_res ? jb.k0 : 0;
    auto matmuls = [&](size_t set, int64_t m0, int64_t p) {
      for (int64_t j = jb.j0; j < jb.j1; ++j) {
        const int64_t nr = tiles[j].n;
        const Tile stat = dT({0, nr}, j - djb, {m0, m0 + p});
        for (int64_t b = 0; b * kBank < jb.kbn; ++b) {
          const int64_t c0 = b * kBank, c1 = std::min(jb.kbn, c0 + kBank);
          const Tile& a = acc[set][static_cast<size_t>(b)];
          if (fj) {  // the pass's transposed K tile: tile j at j
            const int64_t q0 = acc_col(i);
            kb.matmul(a({0, p}, {q0, q0 + c1 - c0}), stat, wT({0, nr}, j, {c0, c1}),
                      {.start = j == 0});
          } else if (plan.w_scratch) {  // whole K tiles, the last one's padding included
            const int64_t r0 = c0 / parts, r1 = ceil_div(c1, parts);
            kb.matmul(a({0, p}, {0, (r1 - r0) * parts}), stat, wT({0, nr}, {r0, r1}, j - wjb, all),
                      {.start = j == 0});
          } else {
            kb.matmul(a({0, p}, {0, c1 - c0}), stat, wT({0, nr}, j - wjb, {wcb + c0, wcb + c1}),
                      {.start = j == 0});
          }
        }
      }
    };
    if (chunks == 1) {
      for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts) {
        const auto set = static_cast<size_t>(acc_no++ % 2);
        matmuls(set, m0, std::min(parts, jb.tbn - m0));
        epilogue(i, set, m0);
      }
      if (plan.w_scratch) load_wT(i + 1 + w_chunks.size());
      continue;
    }
    for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts)
      matmuls(static_cast<size_t>(m0 / parts), m0, std::min(parts, jb.tbn - m0));
    if (plan.w_scratch) load_wT(i + 1 + w_chunks.size());
    if (jb.chunk == chunks - 1)
      for (int64_t m0 = 0; m0 < jb.tbn; m0 += parts)
        epilogue(i, static_cast<size_t>(m0 / parts), m0);
  }
  return kb.build();
}

}  // namespace trnsim::ops
