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
