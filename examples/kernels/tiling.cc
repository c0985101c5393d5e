#include "kernels/tiling.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.h"

namespace trnsim::examples {

MatmulTiles matmul_tiles(const arch::CoreSpec& core) {
  MatmulTiles t;
  t.k = std::min<int64_t>(core.tensor.limits.k_max, core.sbuf.partitions);
  t.m = core.tensor.limits.m_max;
  // One PSUM bank of fp32 (NKI's gemm_moving_fmax), even where a matmul may span more (NC-v4).
  t.n = std::min<int64_t>(core.tensor.limits.n_max_fp32_psum, core.psum.bank_bytes / 4);
  return t;
}

kernel::DmaPolicy load_bound_policy() {
  kernel::DmaPolicy p;
  p.load_triggers = {isa::Engine::kSync, isa::Engine::kScalar};
  return p;
}

void require_matmul_shape(std::string_view kernel, int64_t m, int64_t k, int64_t n,
                          const MatmulTiles& step) {
  require_multiple(kernel, "m", m, step.m);
  require_multiple(kernel, "k", k, step.k);
  require_multiple(kernel, "n", n, step.n);
}

MatmulTensors matmul_tensors(kernel::KernelBuilder& kb, int64_t m, int64_t k, int64_t n) {
  kb.set_dma_policy(load_bound_policy());
  MatmulTensors t;
  t.lhsT = kb.input("lhsT", num::bf16(), {k, m});
  t.rhs = kb.input("rhs", num::bf16(), {k, n});
  t.result = kb.output("result", num::bf16(), {m, n});
  return t;
}

void load_k_strip(kernel::KernelBuilder& kb, const kernel::Tile& strip, const kernel::Tensor& src,
                  int64_t tile_k, int64_t first, kernel::Idx cols) {
  for (int64_t i = 0; i < strip.size(1); ++i) {
    const int64_t k0 = (first + i) * tile_k;
    kb.dma_copy(strip(kernel::all, i), src({k0, k0 + tile_k}, cols));
  }
}

void require_rows(std::string_view kernel, int64_t rows, int64_t cols) {
  require_range(kernel, "rows", rows, 1, int64_t{1} << 30);
  require_range(kernel, "cols", cols, 1, 16384);
}

void require_multiple(std::string_view kernel, std::string_view arg, int64_t value, int64_t of) {
  if (value < 1 || value % of != 0)
    throw InputError(std::string(kernel), std::string(arg),
                     fmt::format("{} is not a positive multiple of {}", value, of));
}

void require_range(std::string_view kernel, std::string_view arg, int64_t value, int64_t lo,
                   int64_t hi) {
  if (value < lo || value > hi)
    throw InputError(std::string(kernel), std::string(arg),
                     fmt::format("{} is outside [{}, {}]", value, lo, hi));
}

}  // namespace trnsim::examples
