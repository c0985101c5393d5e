// The activation backward kernel (train_ops.h ActGradSpec), elementwise: tiles of 128 tokens
// by whole rows (wider rows than fit the tiles in flight, below, in equal column blocks), fp32
// inside, each result rounded once into an input's tile that is dead by then (dy's for dx;
// gate's for dup, up's for dgate) and stored from there.
//   silu, gelu:  d = silu_dx(x) / gelu_dx(x) on ScalarE (the exact derivatives of the forward's
//                silu and erf gelu, core/exec/act_func.cc); dx = dy * d.
//   relu:        m = (x > 0) on ScalarE (in the dtype: 0 and 1 are exact); dx = dy * m, exact.
//   gelu tanh:   y = x s with s = sigmoid(2u), u = k (x + a x^3) (0.5 (1 + tanh u) = s), so
//                y' = s (1 + 2k (1 - s)(x + 3a x^3)); ScalarE makes x^2, the affine steps and
//                the sigmoid, VectorE / GpSimd the products (four steps, software-pipelined
//                over the tiles: below).
//   GLU:         a = act(gate), d = act'(gate) on ScalarE; dup = dy * a, dgate = (dy * up) * d.
// The two-input products (tensor_tensor) are split by columns between VectorE and GpSimd in
// the proportion that makes both finish a tile together (VectorE's own ops counted), so
// neither bounds the kernel while the other idles. Each tile's SBUF is allocated with it and
// placed by live range, so tiles in flight have their own bytes. Loads are emitted a tile
// ahead and stores triggered from Sync behind them, which keeps GpSimd's stream for products.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "base/error.h"
#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/rows.h"
#include "ops/train_ops.h"

namespace trnsim::ops {

namespace {

using isa::ActFunc;
using isa::AluOp;
using isa::Engine;
using kernel::all;

// VectorE's share of the columns of the split ops: VectorE runs `vector_only` cycles per column
// of its own plus its share of `split` cycles per column, GpSimd the rest of `split` (the same
// cost table on GpSimd's clock, core/cost/cost_gpsimd.cc); both finish together. Where the two
// share one SBUF port (NC-v2) nothing overlaps, and the faster clock takes the split ops.
double vector_share(const arch::CoreSpec& core, double vector_only, double split) {
  const double v = core.vector.clock_ghz, g = core.gpsimd.clock_ghz;
  if (core.ports.vector_gpsimd_sbuf_conflict) return v > g ? 1.0 : 0.0;
  return std::clamp((split / g - vector_only / v) / (split / v + split / g), 0.0, 1.0);
}

// dst = in0 op in1 over [p, F] tiles, columns [0, c) on VectorE and [c, F) on GpSimd.
void split_tt(kernel::KernelBuilder& kb, double share, const kernel::Tile& dst,
              const kernel::Tile& in0, const kernel::Tile& in1, AluOp op) {
  const int64_t f = dst.size(1);
  const int64_t c = std::clamp<int64_t>(std::llround(share * static_cast<double>(f)), 0, f);
  if (c > 0) kb.tensor_tensor(dst(all, {0, c}), in0(all, {0, c}), in1(all, {0, c}), op);
  if (c < f)
    kb.tensor_tensor(dst(all, {c, f}), in0(all, {c, f}), in1(all, {c, f}), op, Engine::kGpSimd);
}

// ScalarE's derivative of the forward's function (rows.h act_func), where it has one.
ActFunc derivative(Act a) {
  switch (act_func(a)) {
    case ActFunc::kSilu:
      return ActFunc::kSiluDx;
    case ActFunc::kGelu:
      return ActFunc::kGeluDx;
    default:
      break;
  }
  // Not reached: relu and gelu tanh compose theirs.
  throw InputError("act_backward", "act", "ScalarE has no derivative of this activation");
}

}  // namespace

isa::Program act_backward(const arch::ChipSpec& chip, const ActGradSpec& s) {
  require_range("act_backward", "tokens", s.tokens, 1, int64_t{1} << 24);
  require_range("act_backward", "features", s.features, 1, 65536);
  if (s.act == Act::kNone)
    throw InputError("act_backward", "act", "an activation backward needs an activation");
  const int64_t parts = chip.core.sbuf.partitions;
  const int64_t T = s.tokens, F = s.features;
  const bool glu = is_glu(s.act);
  const bool tanh = s.act == Act::kGeluTanh;
  // Split products per column at 2 cycles each: GLU 3, gelu tanh 4 (next to VectorE's own
  // scalar_tensor_tensor and tensor_scalar, 3 cycles), the others 1.
  const double share = vector_share(chip.core, tanh ? 3.0 : 0.0, 2.0 * (glu ? 3 : (tanh ? 4 : 1)));
  // Columns per tile: whole rows (contiguous HBM blocks) up to a width whose tiles in flight
  // (below) fit SBUF with room to spare; wider rows in equal column blocks.
  const int64_t max_cols = tanh ? 2048 : 4096;
  const int64_t col_blocks = ceil_div(F, max_cols);
  const int64_t cols = ceil_div(F, col_blocks);

  kernel::KernelBuilder kb(chip);
  kernel::Tensor x, gate, up;
  if (glu) {
    gate = kb.input("gate", s.dtype, {T, F});
    up = kb.input("up", s.dtype, {T, F});
  } else {
    x = kb.input("x", s.dtype, {T, F});
  }
  const kernel::Tensor dy = kb.input("dy", s.dtype, {T, F});
  kernel::Tensor dx, dgate, dup;
  if (glu) {
    dgate = kb.output("dgate", s.dtype, {T, F});
    dup = kb.output("dup", s.dtype, {T, F});
  } else {
    dx = kb.output("dx", s.dtype, {T, F});
  }
  // gelu tanh: u = k (x + a x^3), 2u = 2ka (x^3 + x / a).
  const double k = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
  const kernel::DmaOpts store{.trigger = Engine::kSync};  // after the next tile's loads

  // One tile: p tokens from r0, w columns from c0.
  struct Block {
    int64_t r0 = 0, p = 0, c0 = 0, w = 0;
    kernel::Tile xt, upt, dyt, A, B, C;
  };
  std::vector<Block> blocks;
  for (int64_t r0 = 0; r0 < T; r0 += parts)
    for (int64_t c0 = 0; c0 < F; c0 += cols) {
      Block& b = blocks.emplace_back();
      b.r0 = r0;
      b.p = std::min(parts, T - r0);
      b.c0 = c0;
      b.w = std::min(cols, F - c0);
    }
  auto hbm = [](const kernel::Tensor& t, const Block& b) {
    return t({b.r0, b.r0 + b.p}, {b.c0, b.c0 + b.w});
  };
  auto tile = [&](const char* name, num::Format f, const Block& b) {
    return kb.sbuf(name, f, {parts, cols})({0, b.p}, {0, b.w});
  };
  auto load = [&](Block& b) {
    b.xt = tile(glu ? "gate" : "x", s.dtype, b);
    kb.dma_copy(b.xt, hbm(glu ? gate : x, b));
    if (glu) {
      b.upt = tile("up", s.dtype, b);
      kb.dma_copy(b.upt, hbm(up, b));
    }
    b.dyt = tile("dy", s.dtype, b);
    kb.dma_copy(b.dyt, hbm(dy, b));
  };
  // Without a round trip through VectorE, ScalarE's work of a tile does not wait for the other
  // engines, so it runs ahead by itself; the loads are emitted one tile ahead so that the
  // stores (from Sync: GpSimd's stream stays with its products), which wait for their
  // products, do not hold them back on Sync's stream.
  auto compute = [&](Block& b) {
    if (glu) {
      b.A = tile("act", num::fp32(), b);
      b.B = tile("dact", num::fp32(), b);
      kb.activation(b.A, b.xt, act_func(s.act));
      kb.activation(b.B, b.xt, derivative(s.act));
      split_tt(kb, share, b.xt, b.dyt, b.A, AluOp::kMult);  // dup, into the gate's tile
      kb.dma_copy(hbm(dup, b), b.xt, store);
      split_tt(kb, share, b.B, b.B, b.upt, AluOp::kMult);    // up * act'(gate)
      split_tt(kb, share, b.upt, b.dyt, b.B, AluOp::kMult);  // dgate, into up's tile
      kb.dma_copy(hbm(dgate, b), b.upt, store);
      return;
    }
    if (s.act == Act::kRelu) {
      // The mask in the dtype: 0 and 1 are exact, so dy * mask is exact too.
      b.A = tile("mask", s.dtype, b);
      kb.tensor_scalar(b.A, b.xt, {AluOp::kIsGt, 0.0f}, {}, Engine::kScalar);
    } else {
      b.A = tile("dact", num::fp32(), b);
      kb.activation(b.A, b.xt, derivative(s.act));
    }
    split_tt(kb, share, b.dyt, b.dyt, b.A, AluOp::kMult);
    kb.dma_copy(hbm(dx, b), b.dyt, store);
  };
  // gelu tanh, with y' = s f, f = 1 + 2k (1 - s)(x + 3a x^3), in four steps that alternate
  // between ScalarE (1, 3) and VectorE / GpSimd (2, 4):
  //   1. x^2, q1 = x^2 + 1/a, q2 = x^2 + 1/(3a)        2. B = q1 x, C = q2 x = (x + 3a x^3)/(3a)
  //   3. s = sigmoid(2ka B) into B                      4. C = (s - 1) C, C = 1 - 6ka C = f,
  //                                                        A = dy s, dx = A f
  auto tanh1 = [&](Block& b) {
    b.A = tile("x2", num::fp32(), b);
    b.B = tile("q1", num::fp32(), b);
    b.C = tile("q2", num::fp32(), b);
    kb.activation(b.A, b.xt, ActFunc::kSquare);
    kb.activation(b.B, b.A, ActFunc::kCopy, 1.0f, 1.0 / a);
    kb.activation(b.C, b.A, ActFunc::kCopy, 1.0f, 1.0 / (3.0 * a));
  };
  auto tanh2 = [&](Block& b) {
    split_tt(kb, share, b.B, b.B, b.xt, AluOp::kMult);
    split_tt(kb, share, b.C, b.C, b.xt, AluOp::kMult);
  };
  auto tanh3 = [&](Block& b) { kb.activation(b.B, b.B, ActFunc::kSigmoid, 2.0 * k * a); };
  auto tanh4 = [&](Block& b) {
    kb.scalar_tensor_tensor(b.C, b.B, {AluOp::kSubtract, 1.0f}, AluOp::kMult, b.C);
    kb.tensor_scalar(b.C, b.C, {AluOp::kMult, -6.0 * k * a}, {AluOp::kAdd, 1.0f});
    b.A = tile("dys", num::fp32(), b);
    split_tt(kb, share, b.A, b.dyt, b.B, AluOp::kMult);
    split_tt(kb, share, b.dyt, b.A, b.C, AluOp::kMult);
    kb.dma_copy(hbm(dx, b), b.dyt, store);
  };

  const auto n = static_cast<int64_t>(blocks.size());
  auto at = [&](int64_t i) -> Block& { return blocks[static_cast<size_t>(i)]; };
  if (!tanh) {
    for (int64_t i = 0; i <= n; ++i) {
      if (i < n) load(at(i));
      if (i > 0) compute(at(i - 1));
    }
    return kb.build();
  }
  // gelu tanh, software-pipelined (each engine runs its instructions in emission order): in
  // step i ScalarE does step 1 of tile i, then step 3 of tile i-1; VectorE and GpSimd step 2
  // of tile i-1 (ready since step i-1; ScalarE's step 3 waits for it while it does step 1),
  // then step 4 of tile i-2 (whose step 3 ScalarE did in step i-1).
  load(at(0));
  for (int64_t i = 0; i < n + 2; ++i) {
    if (i + 1 < n) load(at(i + 1));
    if (i < n) tanh1(at(i));
    if (i >= 1 && i - 1 < n) tanh2(at(i - 1));
    if (i >= 1 && i - 1 < n) tanh3(at(i - 1));
    if (i >= 2 && i - 2 < n) tanh4(at(i - 2));
  }
  return kb.build();
}

}  // namespace trnsim::ops
