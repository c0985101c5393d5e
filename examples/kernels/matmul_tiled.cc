// NKI tutorial kernel 1, nki_matmul_tiled_: for every 128 x 512 tile of the result, loop over K
// loading one 128 x 128 tile of lhsT and one 128 x 512 tile of rhs per step, accumulate the
// matmuls in one PSUM bank, copy to SBUF (bf16) and store.
//
// The tutorial declares its tiles inside the loops and the Neuron compiler gives tiles of
// affine_range loops several buffers so that iterations overlap; the kernel API leaves that
// to the author, so this kernel rotates through kLoadBufs SBUF buffers per input tile and two
// PSUM / result buffers (trnsim's choice of depth; the compiler's is not published).
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

namespace {
constexpr int kLoadBufs = 4;
constexpr int kOutBufs = 2;
}  // namespace

isa::Program matmul_tiled(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n) {
  using kernel::Tile;
  const MatmulTiles t = matmul_tiles(chip.core);
  require_matmul_shape("matmul_tiled", m, k, n, t);
  kernel::KernelBuilder kb(chip);
  const auto [lhsT, rhs, result] = matmul_tensors(kb, m, k, n);

  const auto lhsT_bufs = kb.sbuf_buffers("lhsT_tile", num::bf16(), {t.k, t.m}, kLoadBufs);
  const auto rhs_bufs = kb.sbuf_buffers("rhs_tile", num::bf16(), {t.k, t.n}, kLoadBufs);
  const auto psum_bufs = kb.psum_buffers("res_psum", num::fp32(), {t.m, t.n}, kOutBufs);
  const auto out_bufs = kb.sbuf_buffers("res_sb", num::bf16(), {t.m, t.n}, kOutBufs);
  size_t load = 0, out = 0;
  for (int64_t mi = 0; mi < m / t.m; ++mi) {
    for (int64_t ni = 0; ni < n / t.n; ++ni) {
      const Tile& res_psum = psum_bufs[out % kOutBufs];
      for (int64_t ki = 0; ki < k / t.k; ++ki) {
        const Tile& lhsT_tile = lhsT_bufs[load % kLoadBufs];
        const Tile& rhs_tile = rhs_bufs[load % kLoadBufs];
        ++load;
        kb.dma_copy(lhsT_tile, lhsT({ki * t.k, (ki + 1) * t.k}, {mi * t.m, (mi + 1) * t.m}));
        kb.dma_copy(rhs_tile, rhs({ki * t.k, (ki + 1) * t.k}, {ni * t.n, (ni + 1) * t.n}));
        kb.matmul(res_psum, lhsT_tile, rhs_tile);
      }
      const Tile& res_sb = out_bufs[out % kOutBufs];
      ++out;
      kb.tensor_copy(res_sb, res_psum);
      kb.dma_copy(result({mi * t.m, (mi + 1) * t.m}, {ni * t.n, (ni + 1) * t.n}), res_sb);
    }
  }
  return kb.build();
}

}  // namespace trnsim::examples
