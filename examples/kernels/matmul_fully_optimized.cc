// NKI tutorial kernel 4, nki_matmul_fully_optimized_: M, N and K all blocked (by default 16, 2
// and 8 tiles: blocks of 2048 x 1024 x 1024), with large DMAs (one [128, BLOCK] load per K
// tile). Per N block, the result rows of all M tiles stay in SBUF ([128, tiles_n, 512] bf16
// each, zeroed first); per K block, the rhs block is loaded once and, per M block, the lhsT
// block; every [128, 512] result tile accumulates its K block in PSUM and is added into its
// SBUF result tile (tensor_tensor add, in bf16 as the tutorial); after the last K block, each
// result M tile is stored as one [128, BLOCK_N] DMA.
//
// Buffers (trnsim's choice, the compiler's in NKI): two of each input block so the next block
// loads during the current one's matmuls, four PSUM banks for result tiles.
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

isa::Program matmul_fully_optimized(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n,
                                    MatmulBlocks b) {
  using kernel::all;
  using kernel::Tile;
  constexpr std::string_view kName = "matmul_fully_optimized";
  const MatmulTiles t = matmul_tiles(chip.core);
  require_range(kName, "tiles_m", b.tiles_m, 1, 1024);
  require_range(kName, "tiles_n", b.tiles_n, 1, 1024);
  require_range(kName, "tiles_k", b.tiles_k, 1, 1024);
  const int64_t block_m = t.m * b.tiles_m, block_n = t.n * b.tiles_n, block_k = t.k * b.tiles_k;
  require_matmul_shape(kName, m, k, n, {.k = block_k, .m = block_m, .n = block_n});
  kernel::KernelBuilder kb(chip);
  const auto [lhsT, rhs, result] = matmul_tensors(kb, m, k, n);

  const auto rhs_bufs = kb.sbuf_buffers("rhs_tiles", num::bf16(), {t.k, b.tiles_k, block_n}, 2);
  const auto lhsT_bufs = kb.sbuf_buffers("lhsT_tiles", num::bf16(), {t.k, b.tiles_k, block_m}, 2);
  const auto psum_bufs = kb.psum_buffers("result_tile", num::fp32(), {t.m, t.n}, 4);
  int64_t rhs_load = 0, lhsT_load = 0, tile = 0;
  for (int64_t nb = 0; nb < n / block_n; ++nb) {
    const int64_t n0 = nb * block_n;
    std::vector<Tile> result_m_tiles;
    for (int64_t mt = 0; mt < m / t.m; ++mt) {
      result_m_tiles.push_back(
          kb.sbuf("result_m_tile" + std::to_string(mt), num::bf16(), {t.m, b.tiles_n, t.n}));
      kb.memset(result_m_tiles.back(), 0.0);
    }
    for (int64_t kb_i = 0; kb_i < k / block_k; ++kb_i) {
      const Tile& rhs_tiles = rhs_bufs[static_cast<size_t>(rhs_load++ % 2)];
      load_k_strip(kb, rhs_tiles, rhs, t.k, kb_i * b.tiles_k, {n0, n0 + block_n});
      for (int64_t mb = 0; mb < m / block_m; ++mb) {
        const int64_t m0 = mb * block_m;
        const Tile& lhsT_tiles = lhsT_bufs[static_cast<size_t>(lhsT_load++ % 2)];
        load_k_strip(kb, lhsT_tiles, lhsT, t.k, kb_i * b.tiles_k, {m0, m0 + block_m});
        for (int64_t nt = 0; nt < b.tiles_n; ++nt) {
          for (int64_t mt = 0; mt < b.tiles_m; ++mt) {
            const Tile& result_tile = psum_bufs[static_cast<size_t>(tile++ % 4)];
            for (int64_t kt = 0; kt < b.tiles_k; ++kt)
              kb.matmul(result_tile, lhsT_tiles(all, kt, {mt * t.m, (mt + 1) * t.m}),
                        rhs_tiles(all, kt, {nt * t.n, (nt + 1) * t.n}));
            // Evict from PSUM while accumulating into the result M tile.
            const Tile& acc = result_m_tiles[static_cast<size_t>(mb * b.tiles_m + mt)];
            kb.tensor_tensor(acc(all, nt, all), acc(all, nt, all), result_tile, isa::AluOp::kAdd);
          }
        }
      }
    }
    for (int64_t mt = 0; mt < m / t.m; ++mt)
      kb.dma_copy(result({mt * t.m, (mt + 1) * t.m}, {n0, n0 + block_n}),
                  result_m_tiles[static_cast<size_t>(mt)].reshape({t.m, block_n}));
  }
  return kb.build();
}

}  // namespace trnsim::examples
