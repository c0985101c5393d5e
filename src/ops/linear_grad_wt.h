// The transposed weight of linear_grad_input (linear_grad.cc), internal to the op library:
// where w^T blocks [128 of N on the partitions, K columns] come from (the plan), and the code
// that makes them from w [K, N] (row-major in HBM):
//   - resident: w^T whole in SBUF, made once;
//   - per job: made again per token block by DMA transposes (NC-v3+) or by TensorE transposes
//     of w's rows staged in SBUF as they lie in HBM (WtMaker);
//   - the scratch: made once into an HBM scratch packed so that every later load of a block is
//     dense (WtScratch). The pass stages w's K tiles as whole rows ([128 rows of K, N]: one
//     contiguous block per load), transposes them on TensorE and writes, per K tile and chunk
//     of nc contraction tiles, one block [128 partitions, tiles of the chunk, K tile columns];
//     a job's block (a chunk and a K block) then loads as one dense DMA per K tile. The pass
//     runs alone first, or step by step beside the first token block, which takes its w^T from
//     the pass's buffers.
// The plan picks per shape by an estimate of the time (TensorE's columns against the DMA's
// bytes at the rate of their kind: loads that gather parts of rows are the slow kind on NC-v2,
// docs/timing.md "DMA"), among those whose buffers fit SBUF; it also sizes the token and K
// blocks, the chunks and the buffers, and says how dy^T is kept (linear_grad.cc).
// Also the TensorE transposes' PSUM rotation, which dy^T's transposes share (Transposer).
#pragma once

#include <cstdint>
#include <vector>

#include "arch/chip_spec.h"
#include "kernel/builder.h"
#include "ops/train_ops.h"

namespace trnsim::ops::lgrad {

inline constexpr int64_t kBank = 512;  // fp32 columns of one PSUM bank
// Elements one access pattern moves per partition (a DMA's SBUF side; the ISA's limit).
inline constexpr int64_t kMaxApElements = 65535;
inline constexpr int kLoadBuffers = 3;      // staged loads in flight
inline constexpr int64_t kWStageTiles = 8;  // tiles of w's columns per staging (WtMaker)
inline constexpr int kScratchOut = 4;       // dx buffers on the scratch path (stores in flight)

// Bytes per partition the compiler allocates SBUF from.
int64_t usable_sbuf(const arch::ChipSpec& chip);

// A run of columns of one split: columns [c0, c0 + n) of dy<split>, [g0, g0 + n) of the
// concatenation (dw's columns, w's columns).
struct Cols {
  int split = 0;
  int64_t c0 = 0, g0 = 0, n = 0;
};

// Each split cut into runs of at most `width` columns, in order.
std::vector<Cols> split_cols(const std::vector<int64_t>& splits, int64_t width);

// How linear_grad_input runs (linear_grad.cc); plans are chosen by input_plan().
struct InputPlan {
  bool dma_transpose = false;  // dy^T (and w^T per job) by DMA transposes (else TensorE)
  std::vector<Cols> tiles;     // contraction tiles (128 columns of one split at most)
  int64_t nt = 0;
  int64_t tb = 0, mt = 0;      // token block, its token tiles
  int64_t kbanks = 0;          // PSUM banks (512 columns of K each) per K block
  bool w_res = false;          // w^T whole in SBUF, made once
  bool dy_res = false;         // dy^T of a token block whole in SBUF, made once per block
  int64_t nc = 0, chunks = 1;  // contraction tiles per chunk, chunks
  int64_t avail_banks = 0;     // PSUM banks for the accumulators
  // The scratch path: w^T made once into an HBM scratch (WtScratch) and loaded per job; dy^T
  // of a token block kept in `ring` chunk buffers [P, nc, tb] until its last K block, made per
  // token tile spread over the previous block's jobs when the ring holds two blocks
  // (dy_by_token), else per chunk as soon as its buffer is free.
  bool w_scratch = false;
  int64_t ring = 0;
  bool dy_by_token = false;
  // dy staging buffers: [P, stage_tiles * P] (chunk plans), [P, stage_m, stage_tiles * P].
  int64_t stage_m = 0, stage_tiles = 0;
  int64_t wbufs = kLoadBuffers;  // w^T chunk buffers (loads wbufs - 1 jobs ahead)
  int64_t stages = 2;            // dy staging buffers
  int64_t pass_group = 0;        // contraction tiles per staged group of w's rows
  int pass_bufs = 3;             // the pass's staging and transposed buffers (each)
  // The pass goes step by step beside the first token block, whose jobs (K blocks of one K
  // tile) take w^T from the pass's transposed buffers instead of the scratch.
  bool fuse0 = false;
  // Loads of whole rows (dense blocks of HBM): dy's, w's (TensorE transposes).
  bool dy_rows = false, w_rows = false;
};

// The plan for `s` on `chip`: w^T resident when it fits SBUF, else remade per token block or
// through the scratch, whichever is estimated faster.
InputPlan input_plan(const arch::ChipSpec& chip, const LinearGradInputSpec& s);

// TensorE transposes of blocks of at most 128 x 128 into PSUM tiles of a bank ([P, per_bank,
// P], `bufs` in turn; fp32 where the transpose is not bit-exact for the dtype), copied to SBUF
// by VectorE and ScalarE in turn.
class Transposer {
 public:
  Transposer(kernel::KernelBuilder& kb, num::Format dt, int bufs);
  int64_t per_bank() const { return per_bank_; }
  const kernel::Tile& next() { return bufs_[static_cast<size_t>(no_++) % bufs_.size()]; }
  void copy_out(const kernel::View& dst, const kernel::View& src);

 private:
  kernel::KernelBuilder& kb_;
  std::vector<kernel::Tile> bufs_;
  int64_t per_bank_ = 1, no_ = 0, copy_no_ = 0;
};

// w^T of contraction tiles [j0, j1) and K columns [k0, k0 + kbn), made per job.
class WtMaker {
 public:
  // tp: TensorE transposes (null: DMA transposes). kbw: the K block's width, stage_tiles: tiles
  // of w's columns per staging buffer (TensorE).
  WtMaker(kernel::KernelBuilder& kb, const kernel::Tensor& w, const std::vector<Cols>& tiles,
          Transposer* tp, int64_t kbw, int64_t stage_tiles);
  // Into dst [P, *, *] from tile jb on, at column cb.
  void make(const kernel::Tile& dst, int64_t jb, int64_t cb, int64_t j0, int64_t j1, int64_t k0,
            int64_t kbn);

 private:
  kernel::KernelBuilder& kb_;
  kernel::Tensor w_;
  const std::vector<Cols>& tiles_;
  Transposer* tp_;
  int64_t kbw_, stage_tiles_, stage_no_ = 0;
  std::vector<kernel::Tile> stage_;
};

// w^T in an HBM scratch, packed per chunk of nc contraction tiles and K tile: block (c, kt) is
// [128 partitions, q_c tiles, kr columns] (partition p of tile j holds w's column tiles[j].g0 +
// p; the partitions past a short tile's columns are padding, never read).
class WtScratch {
 public:
  // Without `store`, the pass only transposes (for work beside it: step()); nothing is written.
  WtScratch(kernel::KernelBuilder& kb, const std::vector<Cols>& tiles, int64_t in, int64_t nc,
            num::Format dt, bool store = true);
  // The pass: w's rows staged per K tile in groups of `group` tiles (a multiple of nc; all of
  // them: whole rows), transposed by `tp`, every chunk's block written; `bufs` buffers of
  // each ([P, group * P] staged, [P, group, P] transposed). Whole (build), or step by step
  // (begin, then step(n) for n in order: step n is K tile n / groups, group n % groups),
  // so that its steps can go between other work; step() returns the transposed group,
  // [P, group, 128] (tile j of the group at j), valid until step n + bufs.
  void build(const kernel::Tensor& w, Transposer& tp, int64_t group, int bufs);
  void begin(const kernel::Tensor& w, Transposer& tp, int64_t group, int bufs);
  int64_t steps() const;
  const kernel::Tile& step(int64_t n);
  // Chunk c's K columns [k0, k0 + kbn) (whole K tiles but the last) into dst [P, K tiles, nc,
  // 128]: one dense load per K tile.
  void load(const kernel::Tile& dst, int64_t c, int64_t k0, int64_t kbn);

 private:
  int64_t block_offset(int64_t c, int64_t kt) const;
  void load_rows(int64_t n);
  kernel::KernelBuilder& kb_;
  const std::vector<Cols>& tiles_;
  int64_t K_, nc_, nt_, parts_;
  kernel::Tensor s_;
  // The pass.
  kernel::Tensor w_;
  Transposer* tp_ = nullptr;
  int64_t group_ = 0, groups_ = 0;
  int bufs_ = 0;
  std::vector<kernel::Tile> stage_, out_;
};

}  // namespace trnsim::ops::lgrad
