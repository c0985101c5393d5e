// matmul_lnc: result[M, N] (fp32) = lhsT[K, M].T @ rhs[K, N] on the physical cores of one
// logical core (LNC=2, HARDWARE.md s6), split along K:
//  - core r multiplies its K / cores rows in 128-row tiles accumulated in one PSUM bank;
//  - the cores trade the halves of their partial sums with sendrecv, so that core r owns the
//    columns [r N / cores, (r + 1) N / cores) and adds the peer's partial to its own;
//  - each stores its columns, and a core_barrier on the result ends the kernel with every
//    column in HBM (the NKI core_barrier use case: disjoint writes to a shared tensor).
// With one program it is a plain single-core matmul (no barrier: trn1 has none).
#include <fmt/format.h>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "kernels/kernels.h"
#include "kernels/tiling.h"

namespace trnsim::examples {

namespace {
constexpr int kLoadBufs = 4;
}  // namespace

isa::Program matmul_lnc(const arch::ChipSpec& chip, int64_t m, int64_t k, int64_t n, int program_id,
                        int num_programs) {
  using kernel::all;
  constexpr const char* kName = "matmul_lnc";
  const MatmulTiles t = matmul_tiles(chip.core);
  if (num_programs < 1 || num_programs > 2 || program_id < 0 || program_id >= num_programs)
    throw InputError(kName, "program_id",
                     fmt::format("program {} of {}: one logical core has 1 or 2 physical cores",
                                 program_id, num_programs));
  if (m < 1 || m > t.m)
    throw InputError(kName, "m", fmt::format("{}: 1 .. {} (one stationary tile)", m, t.m));
  if (n < num_programs || n > t.n || n % num_programs != 0)
    throw InputError(
        kName, "n",
        fmt::format("{}: a multiple of {} up to {} (one PSUM bank)", n, num_programs, t.n));
  if (k < t.k * num_programs || k % (t.k * num_programs) != 0)
    throw InputError(kName, "k",
                     fmt::format("{}: a multiple of {} ({}-row tiles on each of {} cores)", k,
                                 t.k * num_programs, t.k, num_programs));
  kernel::KernelBuilder kb(chip);
  kb.set_dma_policy(load_bound_policy());
  const kernel::Tensor lhsT = kb.input("lhsT", num::bf16(), {k, m});
  const kernel::Tensor rhs = kb.input("rhs", num::bf16(), {k, n});
  const kernel::Tensor result = kb.output("result", num::fp32(), {m, n});

  const int64_t k_core = k / num_programs, k0 = program_id * k_core;
  const auto lhsT_bufs = kb.sbuf_buffers("lhsT_tile", num::bf16(), {t.k, m}, kLoadBufs);
  const auto rhs_bufs = kb.sbuf_buffers("rhs_tile", num::bf16(), {t.k, n}, kLoadBufs);
  const kernel::Tile acc = kb.psum("partial_psum", num::fp32(), {m, n});
  for (int64_t ki = 0; ki < k_core / t.k; ++ki) {
    const auto& lt = lhsT_bufs[static_cast<size_t>(ki % kLoadBufs)];
    const auto& rt = rhs_bufs[static_cast<size_t>(ki % kLoadBufs)];
    const int64_t row = k0 + ki * t.k;
    kb.dma_copy(lt, lhsT({row, row + t.k}, all));
    kb.dma_copy(rt, rhs({row, row + t.k}, all));
    kb.matmul(acc, lt, rt);
  }
  const kernel::Tile partial = kb.sbuf("partial", num::fp32(), {m, n});
  kb.tensor_copy(partial, acc);
  if (num_programs == 1) {
    kb.dma_copy(result, partial);
    return kb.build();
  }
  const int peer = 1 - program_id;
  const int64_t cols = n / num_programs, own = program_id * cols, theirs = peer * cols;
  const kernel::Tile received = kb.sbuf("peer_partial", num::fp32(), {m, cols});
  kb.sendrecv(received, partial(all, {theirs, theirs + cols}), peer, peer);
  const kernel::Tile sum = kb.sbuf("sum", num::fp32(), {m, cols});
  kb.tensor_tensor(sum, partial(all, {own, own + cols}), received, isa::AluOp::kAdd);
  kb.dma_copy(result(all, {own, own + cols}), sum);
  kb.core_barrier(result);
  return kb.build();
}

}  // namespace trnsim::examples
