// dma_copy (HARDWARE.md s4). A transfer is a stream of elements: the source's elements in
// pattern order (row / partition slowest) land on the destination's in its pattern order, so
// the two patterns need equal element counts, not equal shapes.
//   - equal dtypes: the bytes are copied (bit-exact);
//   - integers of one width (int32 / uint32, ...): the bits are copied (two's complement);
//   - other different dtypes: cast src -> FP32 -> dst with the instruction's rounding (DMA-OV);
//     not for MX-only types (fp4_e2m1, e8m0);
//   - dma_accumulate: dst += src into SBUF, the DMA's read-add-write (NC-v4 near memory; earlier
//     generations at a lower rate: dma_plan.h), bf16 or fp32 on both sides, the sum one FP32
//     add (dst + src) cast back to dst's dtype.
#include <fmt/format.h>

#include "core/exec/matmul_common.h"
#include "core/exec/semantics.h"
#include "isa/dma_add_dtypes.h"
#include "isa/names.h"

namespace trnsim::core {

void exec_dma_copy(ExecContext& ctx) {
  const int64_t n_dst = ctx.rows(0) * ctx.cols(0), n_src = ctx.rows(1) * ctx.cols(1);
  if (n_dst != n_src)
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kShape, 0,
                     fmt::format("destination has {} elements, source {}", n_dst, n_src)));
  const num::Format &fd = ctx.dtype(0), &fs = ctx.dtype(1);
  if (ctx.p.dma_accumulate) {
    // Every generation adds (before NC-v4 in the DMA CC engines, at half rate: a timing matter).
    if (ctx.ap(0).space != isa::Space::kSbuf)
      return static_cast<void>(
          ctx.fault_at(mem::FaultKind::kEngineSpace, 0, "DMA accumulate writes sbuf"));
    const bool ok = fd == fs && isa::sbuf_accumulate_dtype(fd.dtype);
    if (!ok)
      return static_cast<void>(ctx.fault_at(
          mem::FaultKind::kDtype, 0, "DMA accumulate needs bf16 or fp32, the same on both sides"));
    mem::Tile& acc = ctx.read(0);
    const mem::Tile& src = ctx.read(1);  // same element count; flat order matches
    for (int64_t i = 0; i < acc.size(); ++i) {
      const auto u = static_cast<size_t>(i);
      acc.data[u] = acc.data[u] + src.data[u];
    }
    ctx.write(0, acc);
    return;
  }
  // Integers of one width move their bits (two's complement): uint32 0xFFFFFFFF lands in an
  // int32 as -1, as neuronx-distributed's find_index kernel stores its "not found" uint32
  // marks (an assumption from that public kernel: DMA casts go through fp32 for floats).
  const bool same_int_width = fd.kind == num::Kind::kInt && fs.kind == num::Kind::kInt &&
                              fd.storage_bytes == fs.storage_bytes;
  if (fd == fs || same_int_width) {
    ctx.write_codes(0, ctx.codes(1, 0).data());
    return;
  }
  if (is_mx_only(fd) || is_mx_only(fs))
    return static_cast<void>(
        ctx.fault_at(mem::FaultKind::kDtype, 0, "DMA casts do not take MX types (fp4_e2m1, e8m0)"));
  mem::Tile& t = ctx.read(1);
  t.rows = ctx.rows(0);  // the same floats, in the destination's shape
  t.cols = ctx.cols(0);
  ctx.write(0, t);
}

void exec_sendrecv_alone(ExecContext& ctx) {
  ctx.fault(mem::FaultKind::kPeer,
            fmt::format("sendrecv to core {} on pipe {} has no peer core: run the kernel on a "
                        "logical core of 2 (LNC=2)",
                        ctx.p.send_to, ctx.p.pipe));
}

std::string collective_alone_message(const isa::Instruction& ins) {
  return fmt::format(
      "collective {} of replica group {} has no other ranks: run the kernel on "
      "ranks (trnsim.nki.run_ranks, fabric/rank_run.h)",
      isa::name_of(ins.p.collective), ins.p.replica_group);
}

void exec_collective_alone(ExecContext& ctx) {
  ctx.fault(mem::FaultKind::kPeer, collective_alone_message(ctx.in));
}

}  // namespace trnsim::core
