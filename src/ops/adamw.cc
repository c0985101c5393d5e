// The AdamW optimizer step (train_ops.h AdamWSpec). The weight is cut into blocks of
// [128, W] (W <= 2048 fp32 columns), each block one contiguous run of the flat [n] tensors
// (row-major [128, W]: partition p holds W consecutive elements), so every transfer's HBM side
// is a single block and streams at the DMA engines' block rate (a column block of one
// [128, n / 128] matrix would gather 128 rows); the < 128 elements left over are a [1, tail]
// piece. Blocks rotate through three buffer sets, so loads, math and stores of neighbouring
// blocks overlap.
//
// The bias corrections are host constants of `step`; with s = lr / (1 - b1^step) and
// c = sqrt(1 - b2^step), PyTorch's update is
//   master = master * (1 - lr wd) - s m / (sqrt(v) / c + eps)
//          = master * (1 - lr wd) + (-s c) m / (sqrt(v) + eps c),
// which takes one fp32 step fewer. Per block, spread over the engines (fp32 passes):
//   ScalarE: (1 - b1) g; (sqrt(1 - b2) g)^2; sqrt(v) + eps c; master * (1 - lr wd); w = the
//            new master cast to the dtype (stochastic rounding where asked and available)
//   VectorE: m = m b1 + (1 - b1) g; u = (-s c) m / (sqrt(v) + eps c)       (2 x 2 passes)
//   GpSimd:  v = v b2; v += (1 - b2) g^2; master = master (1 - lr wd) + u   (1 + 2 + 2)
// four or five passes each, under the block's HBM traffic (30 bytes per element). Each block's
// math is a chain through all three engines, so it is issued as a three-stage software
// pipeline (below): in-order engines then never wait on a chain while other work is ready.
#include <fmt/format.h>

#include <cmath>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

namespace {

void require_finite(const char* arg, double v, double lo, double hi) {
  if (!(std::isfinite(v) && v >= lo && v <= hi))
    throw InputError("adamw", arg, fmt::format("{} is not a finite value in [{}, {}]", v, lo, hi));
}

// A piece of the flat tensors: `rows` x `cols` elements from `offset`.
struct Piece {
  int64_t offset, rows, cols;
};

}  // namespace

isa::Program adamw(const arch::ChipSpec& chip, const AdamWSpec& s) {
  using isa::ActFunc;
  using isa::AluOp;
  using isa::Engine;
  require_range("adamw", "elements", s.elements, 1, int64_t{1} << 40);
  require_range("adamw", "step", s.step, 1, int64_t{1} << 40);
  require_finite("lr", s.lr, 0, 1e6);
  require_finite("beta1", s.beta1, 0, 1 - 1e-12);
  require_finite("beta2", s.beta2, 0, 1 - 1e-12);
  require_finite("eps", s.eps, 0, 1e6);
  require_finite("weight_decay", s.weight_decay, 0, 1e6);
  const int64_t parts = chip.core.sbuf.partitions, n = s.elements;
  // Blocks of 2048 fp32 columns (1 MiB transfers, the DMA fixed cost well amortised) in three
  // buffer sets, one per pipeline stage below: 3 x 44 KiB per partition.
  constexpr int64_t kBlock = 2048;
  constexpr int kSets = 3;
  const num::Format f32 = num::fp32();

  // Host constants (double, each rounded to fp32 once as an immediate).
  const double bc1 = 1 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bc2 = 1 - std::pow(s.beta2, static_cast<double>(s.step));
  const double c = std::sqrt(bc2), step_size = s.lr / bc1;
  const double decay = 1 - s.lr * s.weight_decay;
  const bool decays = static_cast<float>(decay) != 1.0f;

  kernel::KernelBuilder kb(chip);
  kb.set_seed(s.seed);
  const bool stochastic = s.stochastic_rounding && chip.numerics.stochastic_rounding;
  const kernel::Tensor grad = kb.input("grad", f32, {n});
  const kernel::Tensor master = kb.inout("master", f32, {n});
  const kernel::Tensor m = kb.inout("m", f32, {n});
  const kernel::Tensor v = kb.inout("v", f32, {n});
  const kernel::Tensor w = kb.output("w", s.dtype, {n});

  std::vector<Piece> pieces;
  const int64_t cols = n / parts;
  for (int64_t c0 = 0; c0 < cols; c0 += kBlock)
    pieces.push_back({c0 * parts, parts, std::min(kBlock, cols - c0)});
  if (n % parts != 0) pieces.push_back({cols * parts, 1, n % parts});
  const int64_t width = std::min(kBlock, std::max<int64_t>(cols, n % parts));

  const std::vector<int64_t> shape{parts, width};
  const auto g_bufs = kb.sbuf_buffers("grad", f32, shape, kSets);  // then g^2, then the denom
  const auto m_bufs = kb.sbuf_buffers("m", f32, shape, kSets);
  const auto v_bufs = kb.sbuf_buffers("v", f32, shape, kSets);
  const auto p_bufs = kb.sbuf_buffers("master", f32, shape, kSets);
  const auto u_bufs = kb.sbuf_buffers("grad_scaled", f32, shape, kSets);  // then the update
  const auto w_bufs = kb.sbuf_buffers("w", s.dtype, shape, kSets);
  // Each engine triggers the stores of what it computed, so that no stream waits on another
  // engine's result only to start a transfer.
  const kernel::DmaOpts on_vector{Engine::kVector}, on_pool{Engine::kGpSimd},
      on_scalar{Engine::kScalar};

  struct Block {
    kernel::Tensor hbm_g, hbm_m, hbm_v, hbm_p, hbm_w;
    kernel::Tile g, m, v, p, u, w;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& pc = pieces[i];
    const size_t k = i % static_cast<size_t>(kSets);
    auto hbm = [&](const kernel::Tensor& t) {
      return t({pc.offset, pc.offset + pc.rows * pc.cols}).reshape({pc.rows, pc.cols});
    };
    auto tile = [&](const std::vector<kernel::Tile>& bufs) {
      return bufs[k]({0, pc.rows}, {0, pc.cols});
    };
    blocks.push_back({hbm(grad), hbm(m), hbm(v), hbm(master), hbm(w), tile(g_bufs), tile(m_bufs),
                      tile(v_bufs), tile(p_bufs), tile(u_bufs), tile(w_bufs)});
  }
  // Stage 1: the loads, the moments and the decayed master (the ScalarE scaled copies first).
  auto stage1 = [&](const Block& b) {
    kb.dma_copy(b.g, b.hbm_g);
    kb.dma_copy(b.v, b.hbm_v);
    kb.dma_copy(b.m, b.hbm_m);
    kb.dma_copy(b.p, b.hbm_p);
    kb.activation(b.u, b.g, ActFunc::kCopy, 1 - s.beta1);               // (1 - b1) g
    kb.activation(b.g, b.g, ActFunc::kSquare, std::sqrt(1 - s.beta2));  // (1 - b2) g^2
    if (decays) kb.activation(b.p, b.p, ActFunc::kCopy, decay);         // master (1 - lr wd)
    kb.tensor_scalar(b.v, b.v, {AluOp::kMult, s.beta2}, {}, Engine::kGpSimd);
    kb.tensor_tensor(b.v, b.v, b.g, AluOp::kAdd, Engine::kGpSimd);  // v
    kb.dma_copy(b.hbm_v, b.v, on_pool);
    kb.scalar_tensor_tensor(b.m, b.m, {AluOp::kMult, s.beta1}, AluOp::kAdd, b.u);  // m
    kb.dma_copy(b.hbm_m, b.m, on_vector);
  };
  // Stage 2: u = (-s c) m / (sqrt(v) + eps c) (the denominator into g's buffer, u into
  // (1 - b1) g's), master += u.
  auto stage2 = [&](const Block& b) {
    kb.tensor_scalar(b.g, b.v, {AluOp::kPow, 0.5}, {AluOp::kAdd, s.eps * c}, Engine::kScalar);
    kb.scalar_tensor_tensor(b.u, b.m, {AluOp::kMult, -step_size * c}, AluOp::kDivide, b.g);
    kb.tensor_tensor(b.p, b.p, b.u, AluOp::kAdd, Engine::kGpSimd);
    kb.dma_copy(b.hbm_p, b.p, on_pool);
  };
  // Stage 3: w, the one cast that rounds stochastically.
  auto stage3 = [&](const Block& b) {
    if (stochastic) kb.set_rounding(num::Rounding::kStochastic);
    kb.tensor_copy(b.w, b.p, Engine::kScalar);
    kb.set_rounding(num::Rounding::kNearestEven);
    kb.dma_copy(b.hbm_w, b.w, on_scalar);
  };
  // Software-pipelined: each engine runs its stream in order, so block i's stage 1 is issued
  // before block i-1's stage 2 and block i-2's stage 3, whose inputs (from other engines) are
  // then ready instead of stalling the stream behind a chain that crosses three engines.
  const auto nb = static_cast<int64_t>(blocks.size());
  for (int64_t i = 0; i < nb + 2; ++i) {
    if (i < nb) stage1(blocks[static_cast<size_t>(i)]);
    if (i >= 1 && i - 1 < nb) stage2(blocks[static_cast<size_t>(i - 1)]);
    if (i >= 2) stage3(blocks[static_cast<size_t>(i - 2)]);
  }
  return kb.build();
}

}  // namespace trnsim::ops
