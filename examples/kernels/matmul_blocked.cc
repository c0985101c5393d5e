// NKI tutorial kernel 3, nki_matmul_block_free_dimension_: the free dims are blocked, 2 tiles of
// M (256 columns of lhsT) by 2 tiles of N (1024 columns of rhs): each loaded strip now feeds
// two result tiles, which halves the loads of the hoisted kernel. Per M block, the K strips of
// its two lhsT tiles are loaded; per N block, the K strips of its two rhs tiles; then the four
// result tiles accumulate over K in PSUM and are copied out (bf16) and stored.
//
// The strips of an N block take 2 x K/128 x 1 KiB per partition (128 KiB at K = 8192), so they
// are allocated in the loop body and freed at its end, one set at a time: the next block's
// loads wait for the current block's matmuls (write-after-read on the same bytes).
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

namespace {
constexpr int64_t kTilesInBlockM = 2;
constexpr int64_t kTilesInBlockN = 2;
}  // namespace

isa::Program matmul_blocked(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n) {
  using kernel::all;
  using kernel::Tile;
  const MatmulTiles t = matmul_tiles(chip.core);
  const int64_t block_m = t.m * kTilesInBlockM, block_n = t.n * kTilesInBlockN;
  require_matmul_shape("matmul_blocked", m, k, n, {.k = t.k, .m = block_m, .n = block_n});
  const int64_t kt = k / t.k;
  kernel::KernelBuilder kb(chip);
  const auto [lhsT, rhs, result] = matmul_tensors(kb, m, k, n);

  const auto psum_bufs = kb.psum_buffers("result_tile", num::fp32(), {t.m, t.n}, 2);
  const auto out_bufs = kb.sbuf_buffers("result_tmp", num::bf16(), {t.m, t.n}, 2);
  int64_t out = 0;
  for (int64_t mb = 0; mb < m / block_m; ++mb) {
    // [128, tile in block, K tile, 128]: lhsT rows ki*128.., columns of M tile bm of the block.
    const Tile lhsT_tiles = kb.sbuf("lhsT_tiles", num::bf16(), {t.k, kTilesInBlockM, kt, t.m});
    for (int64_t bm = 0; bm < kTilesInBlockM; ++bm) {
      const int64_t c0 = (mb * kTilesInBlockM + bm) * t.m;
      load_k_strip(kb, lhsT_tiles(all, bm), lhsT, t.k, 0, {c0, c0 + t.m});
    }
    for (int64_t nb = 0; nb < n / block_n; ++nb) {
      const Tile rhs_tiles = kb.sbuf("rhs_tiles", num::bf16(), {t.k, kTilesInBlockN, kt, t.n});
      for (int64_t bn = 0; bn < kTilesInBlockN; ++bn) {
        const int64_t c0 = (nb * kTilesInBlockN + bn) * t.n;
        load_k_strip(kb, rhs_tiles(all, bn), rhs, t.k, 0, {c0, c0 + t.n});
      }
      for (int64_t bm = 0; bm < kTilesInBlockM; ++bm) {
        for (int64_t bn = 0; bn < kTilesInBlockN; ++bn) {
          const Tile& result_tile = psum_bufs[static_cast<size_t>(out % 2)];
          for (int64_t ki = 0; ki < kt; ++ki)
            kb.matmul(result_tile, lhsT_tiles(all, bm, ki), rhs_tiles(all, bn, ki));
          const Tile& result_tmp = out_bufs[static_cast<size_t>(out++ % 2)];
          kb.tensor_copy(result_tmp, result_tile);
          const int64_t r0 = (mb * kTilesInBlockM + bm) * t.m;
          const int64_t c0 = (nb * kTilesInBlockN + bn) * t.n;
          kb.dma_copy(result({r0, r0 + t.m}, {c0, c0 + t.n}), result_tmp);
        }
      }
    }
  }
  return kb.build();
}

}  // namespace trnsim::examples
