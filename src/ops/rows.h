// Pieces the op kernels share: per-token (per-row) normalisation of a tile in SBUF, and the
// norm parameters loaded once, broadcast to every partition by the DMA (a stride-0 row dim).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "isa/instruction.h"
#include "kernel/builder.h"
#include "ops/ops.h"

namespace trnsim::ops {

// gamma (and beta for layer norm) [F] fp32, as [partitions, F] tiles; invalid views for kNone.
struct NormParams {
  kernel::Tile gamma, beta;
};
NormParams load_norm_params(kernel::KernelBuilder& kb, Norm norm, const std::string& prefix,
                            int64_t features);

// Scratch a normalisation needs per row tile (fp32): [P, 8 + 6 * chunks] of statistics, and for
// layer norm [P, F] of centred values (RMSNorm squares into its destination, which it then
// overwrites); allocate one set per buffer.
struct NormScratch {
  kernel::Tile wide, stats;
};
NormScratch norm_scratch(kernel::KernelBuilder& kb, const std::string& name, int64_t features,
                         Norm norm);

// dst[:p] = norm(src[:p]) * gamma (+ beta) over the free dim; src and dst [p, F] (dst may be
// another dtype). RMSNorm: ScalarE squares with the add-reduction, rsqrt(ss / F + eps) on
// ScalarE, one VectorE scalar_tensor_tensor. LayerNorm: VectorE bn_stats / bn_aggr on chunks
// of 512, (x - mean) * rstd in one tensor_scalar, then * gamma + beta.
void normalize_rows(kernel::KernelBuilder& kb, Norm norm, double eps, const kernel::Tile& dst,
                    const kernel::Tile& src, const NormParams& params, const NormScratch& scratch,
                    int64_t p);

// The same normalisation on a few tokens held token by token across the partitions (the
// column layout of a decode step): src and dst [P, T, K / P], partition p holding features
// [p * K / P, (p + 1) * K / P) of every token, so each pass works K / P elements per token on
// every partition instead of K on one (a [1, 8192] row on one partition is ~8,192 cycles per
// pass). The per-token sums cross the partitions in one TensorE matmul with a ones matrix,
// which leaves every partition holding every token's total.
struct ColumnNorm {
  kernel::Tile gamma, beta;     // [P, K / P] fp32, the features as the tokens hold them
  kernel::Tile ones;            // [P, P] fp32
  kernel::Tile sq, dev, stats;  // [P, T, K / P] (dev: layer norm's) and [P, 6 T] fp32 scratch
  kernel::Tile sums;            // PSUM [P, 2 T] fp32
};
ColumnNorm load_column_norm(kernel::KernelBuilder& kb, Norm norm, int64_t features, int64_t tokens);
void normalize_columns(kernel::KernelBuilder& kb, Norm norm, double eps, const kernel::Tile& dst,
                       const kernel::Tile& src, const ColumnNorm& c);

// RoPE (rotate-half, Hugging Face Llama) over [p, n, d] views, in fp32: dst = src * cos +
// rotate_half(src) * sin, rotate_half([x1, x2]) = [-x2, x1] for the halves of a head; c and sn
// [p, n, d] (or broadcast over n); rf and tmp [p, n, d] fp32 scratch. Rounded once into dst.
void rope_rotate(kernel::KernelBuilder& kb, const kernel::Tile& dst, const kernel::Tile& src,
                 const kernel::Tile& c, const kernel::Tile& sn, const kernel::Tile& rf,
                 const kernel::Tile& tmp, isa::Engine e);
// The rotation's transpose, the gradient of its input from g: g * cos + rotate_half^T(g * sin),
// rotate_half^T([a1, a2]) = [a2, -a1] (the rotation is linear). a and u: [p, n, d] fp32 scratch.
void rope_rotate_back(kernel::KernelBuilder& kb, const kernel::Tile& dst, const kernel::Tile& g,
                      const kernel::Tile& c, const kernel::Tile& sn, const kernel::Tile& a,
                      const kernel::Tile& u, isa::Engine e);

// Throws InputError("<op>", "<arg>", ...) unless lo <= value <= hi.
void require_range(std::string_view op, std::string_view arg, int64_t value, int64_t lo,
                   int64_t hi);

// ScalarE's function for an activation (of a GLU: the gate's); kCopy for none.
isa::ActFunc act_func(Act a);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace trnsim::ops
