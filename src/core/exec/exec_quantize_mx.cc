// NC-v4 VectorE quantize_mx (HARDWARE.md s2.3, s5): src [P, F] (bf16 / fp16) -> MXFP8
// elements [P, F] (fp8_e4m3fn or fp8_e5m2, 4 consecutive free elements packed per group) and
// E8M0 scales in the quadrant layout of mx_layout.h. Each block of 32 (8 partitions x 4
// elements, k = 4p + j) is quantised by numerics/mx.h with the Trainium scale rule
// (2^(floor(log2 amax) - (emax - 1)); an all-zero block gets 2^-127), elements rounded with the
// instruction's rounding (stochastic bits at index 32 * block + k) and saturated. Scale rows
// outside the layout are left as they were.
#include <fmt/format.h>

#include <array>

#include "core/exec/mx_layout.h"
#include "core/exec/semantics.h"
#include "numerics/mx.h"

namespace trnsim::core {

void exec_quantize_mx(ExecContext& ctx) {
  if (!ctx.core().features.quantize_mx)
    return static_cast<void>(ctx.fault(mem::FaultKind::kUnsupported, "quantize_mx needs NC-v4"));
  const num::Format& elem = ctx.dtype(0);
  if (elem.dtype != num::Dtype::kFp8E4M3Fn && elem.dtype != num::Dtype::kFp8E5M2)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 0, "quantize_mx writes fp8_e4m3fn or fp8_e5m2"));
  const num::Dtype sd = ctx.dtype(2).dtype;
  if (sd != num::Dtype::kBf16 && sd != num::Dtype::kFp16)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 2, "quantize_mx reads bf16 or fp16"));
  const num::Dtype scd = ctx.dtype(1).dtype;
  if (scd != num::Dtype::kE8M0 && scd != num::Dtype::kUint8)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 1, "MX scales are e8m0 or uint8"));
  const int64_t parts = ctx.rows(2), f = ctx.cols(2);
  if (!ctx.same_shape(2, 0)) return;
  if (parts % kMxPartitionsPerBlock != 0 || f % kMxPack != 0)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 2,
                     "quantize_mx takes a multiple of 8 partitions and of 4 elements"));
  const int64_t groups = f / kMxPack;
  if (ctx.rows(1) < mx_scale_rows(parts) || ctx.cols(1) != groups)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 1,
                     fmt::format("scales must be [>= {}, {}]", mx_scale_rows(parts), groups)));

  const mem::Tile& x = ctx.read(2);
  std::vector<uint8_t>& scales = ctx.codes(1, 2);  // keep rows the layout does not use
  std::vector<uint8_t>& elems = ctx.buffer(3);
  elems.resize(static_cast<size_t>(parts * f));
  num::RoundOptions ro = ctx.round_options(0);
  std::array<float, num::kMxBlockSize> block;
  std::array<uint8_t, num::kMxBlockSize> codes;
  const int64_t blocks_per_col = parts / kMxPartitionsPerBlock;
  for (int64_t b = 0; b < blocks_per_col; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t p0 = b * kMxPartitionsPerBlock;
      for (int64_t i = 0; i < kMxPartitionsPerBlock; ++i)
        for (int64_t j = 0; j < kMxPack; ++j)
          block[static_cast<size_t>(i * kMxPack + j)] = x.at(p0 + i, g * kMxPack + j);
      ro.index_base = static_cast<uint64_t>((b * groups + g) * int64_t{num::kMxBlockSize});
      uint8_t scale = 0;
      num::quantize_mx(block.data(), block.size(), elem, num::MxScaleRule::kTrainium, ro,
                       codes.data(), &scale);
      for (int64_t i = 0; i < kMxPartitionsPerBlock; ++i)
        for (int64_t j = 0; j < kMxPack; ++j)
          elems[static_cast<size_t>((p0 + i) * f + g * kMxPack + j)] =
              codes[static_cast<size_t>(i * kMxPack + j)];
      scales[static_cast<size_t>(mx_scale_row(p0) * groups + g)] = scale;
    }
  ctx.write_codes(0, elems.data());
  ctx.write_codes(1, scales.data());
}

}  // namespace trnsim::core
