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

// Scores, probabilities and their gradients: [rows, cols], row (b Hq + h) S + i the query i of
// q head h of sequence b, cols the keys.
struct EagerRows {
  int64_t rows = 0, cols = 0;
};
EagerRows eager_rows(const AttentionSpec& s);

// Throws InputError naming `op` and the argument for what the eager kernels do not take.
void check_eager_attention(std::string_view op, const arch::ChipSpec& chip, const AttentionSpec& s);

isa::Program attention_eager(const arch::ChipSpec& chip, const AttentionSpec& s);
isa::Program attention_eager_backward(const arch::ChipSpec& chip, const AttentionSpec& s);

}  // namespace trnsim::ops
