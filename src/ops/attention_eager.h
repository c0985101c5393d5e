// What the eager attention kernels (attention_eager.cc, attention_eager_backward.cc) share:
// the checks, the layout of the [S, S] tensors they keep in HBM, and their block sizes.
#pragma once

#include <cstdint>
#include <string_view>

#include "arch/chip_spec.h"
#include "isa/program.h"
#include "ops/ops.h"

namespace trnsim::ops {

// Keys per block of the score matmuls: one PSUM bank of fp32 (2 KiB a partition).
inline constexpr int64_t kEagerKeyBlock = 512;
// Columns of the [S, S] tensors per DMA: 4 KiB a partition in bf16, what saturates the
// engines (HARDWARE.md s4: at least 2 KiB, 4 KiB to saturate).
inline constexpr int64_t kEagerDmaCols = 2048;
// Columns of a row tile a softmax pass holds at once (bf16: 8 KiB a partition, and 16 KiB of
// fp32 exponentials); longer rows are read in chunks, once per pass.
inline constexpr int64_t kRowChunk = 4096;

// The kernels' sizes. Scores, probabilities and their gradients are [rows, seq]: row
// (b Hq + h) S + i the query i of q head h of sequence b, a column per key.
struct EagerDims {
  int64_t rows = 0;
  int64_t parts = 0, seq = 0, d = 0, group = 0;  // partitions, tokens, head_dim, q heads per kv
  int64_t st = 0;                                // 128-token tiles
  int64_t bk = 0;                                // keys per score matmul block
  int64_t wide = 0;                              // columns of the [S, S] tensors per DMA
  int64_t chunk = 0, nchunks = 0;                // softmax row chunks
  num::Format tdt;                               // of TensorE transposes in PSUM
  float scale = 1;                               // 1 / sqrt(d)
  bool dma_t = false;                            // the DMA transposes the dtype (NC-v3 on)
};
EagerDims eager_dims(const arch::ChipSpec& chip, const AttentionSpec& s);

// Throws InputError naming `op` and the argument for what the eager kernels do not take.
void check_eager_attention(std::string_view op, const arch::ChipSpec& chip, const AttentionSpec& s);

isa::Program attention_eager(const arch::ChipSpec& chip, const AttentionSpec& s);
void emit_attention_eager(kernel::KernelBuilder& kb, const arch::ChipSpec& chip,
                          const AttentionSpec& s);
isa::Program attention_eager_backward(const arch::ChipSpec& chip, const AttentionSpec& s);

}  // namespace trnsim::ops
