// stream_shuffle (NKI nc_stream_shuffle): VectorE's cross-partition move inside each quadrant
// of 32 partitions. Output partition 32 q + i takes input partition 32 q + shuffle[i] of the
// same quadrant q (partitions counted from each operand's start), or keeps its value where
// shuffle[i] is 255. Elements move unchanged (same dtype, raw codes), so a shuffle is bit-exact
// for every dtype; src is read whole before dst is written, so dst may be src.
#include <fmt/format.h>

#include <cstring>

#include "core/exec/exec_context.h"
#include "core/exec/semantics.h"

namespace trnsim::core {

void exec_stream_shuffle(ExecContext& ctx) {
  if (ctx.dtype(0) != ctx.dtype(1))
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 0,
                     fmt::format("stream_shuffle moves {} unchanged; dst is {}",
                                 ctx.dtype(1).name(), ctx.dtype(0).name())));
  const int64_t f = ctx.cols(0), rows = ctx.rows(0), src_rows = ctx.rows(1);
  if (ctx.cols(1) != f)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 1,
                     fmt::format("src has {} elements per partition, dst {}", ctx.cols(1), f)));
  const auto& mask = ctx.in.p.shuffle;
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t from = isa::shuffle_source(mask, j);
    const uint8_t m = mask[static_cast<size_t>(j % isa::kShuffleQuadrant)];
    if (from >= 0 && (m >= isa::kShuffleQuadrant || from >= src_rows))
      return static_cast<void>(ctx.fault_at(
          mem::FaultKind::kShape, 1,
          fmt::format("dst partition {} copies source partition {} of a {}-partition src", j, from,
                      src_rows)));
  }
  const auto row_bytes = static_cast<size_t>(f * ctx.dtype(0).storage_bytes);
  const std::vector<uint8_t>& src = ctx.codes(1, 0);
  std::vector<uint8_t>& dst = ctx.codes(0, 1);  // the kept partitions' current values
  for (int64_t j = 0; j < rows; ++j) {
    const int64_t from = isa::shuffle_source(mask, j);
    if (from < 0) continue;
    const auto s = static_cast<size_t>(from);
    std::memcpy(dst.data() + static_cast<size_t>(j) * row_bytes, src.data() + s * row_bytes,
                row_bytes);
  }
  ctx.write_codes(0, dst.data());
}

}  // namespace trnsim::core
