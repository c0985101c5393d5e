// NKI tutorial kernel 2, nki_matmul_hoist_load_: the loads leave the K loop. For every M tile,
// the whole K strip of lhsT (K/128 tiles of 128 x 128) is loaded once; for every N tile, the
// whole K strip of rhs (K/128 tiles of 128 x 512); then the K matmuls accumulate in PSUM, the
// result is copied to SBUF in fp32 (as the tutorial) and the store casts it to bf16.
//
// Buffers (the compiler's choice in NKI, trnsim's here): two of each strip, so that the next
// strip loads while the current one is multiplied.
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

isa::Program matmul_hoisted(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n) {
  using kernel::Tile;
  const MatmulTiles t = matmul_tiles(chip.core);
  require_matmul_shape("matmul_hoisted", m, k, n, t);
  const int64_t kt = k / t.k;
  kernel::KernelBuilder kb(chip);
  const auto [lhsT, rhs, result] = matmul_tensors(kb, m, k, n);

  // A strip is [128 partitions, K/128 tiles, free]: tile ki holds rows ki*128 .. ki*128+127.
  const auto lhsT_strips = kb.sbuf_buffers("lhsT_tiles", num::bf16(), {t.k, kt, t.m}, 2);
  const auto rhs_strips = kb.sbuf_buffers("rhs_tiles", num::bf16(), {t.k, kt, t.n}, 2);
  const auto psum_bufs = kb.psum_buffers("res_psum", num::fp32(), {t.m, t.n}, 2);
  const auto out_bufs = kb.sbuf_buffers("res_sb", num::fp32(), {t.m, t.n}, 2);
  int64_t strip = 0, out = 0;
  for (int64_t mi = 0; mi < m / t.m; ++mi) {
    const Tile& lhsT_tiles = lhsT_strips[static_cast<size_t>(mi % 2)];
    load_k_strip(kb, lhsT_tiles, lhsT, t.k, 0, {mi * t.m, (mi + 1) * t.m});
    for (int64_t ni = 0; ni < n / t.n; ++ni) {
      const Tile& rhs_tiles = rhs_strips[static_cast<size_t>(strip++ % 2)];
      load_k_strip(kb, rhs_tiles, rhs, t.k, 0, {ni * t.n, (ni + 1) * t.n});
      const Tile& res_psum = psum_bufs[static_cast<size_t>(out % 2)];
      for (int64_t ki = 0; ki < kt; ++ki)
        kb.matmul(res_psum, lhsT_tiles(kernel::all, ki), rhs_tiles(kernel::all, ki));
      const Tile& res_sb = out_bufs[static_cast<size_t>(out++ % 2)];
      kb.tensor_copy(res_sb, res_psum);
      kb.dma_copy(result({mi * t.m, (mi + 1) * t.m}, {ni * t.n, (ni + 1) * t.n}), res_sb);
    }
  }
  return kb.build();
}

}  // namespace trnsim::examples
