// Indirect DMA calls (dma_gather, dma_scatter): one row of an HBM tensor per SBUF partition,
// the row numbers read from an SBUF tile when the transfer runs (isa op table: the rules).
#include <fmt/format.h>

#include "kernel/builder.h"
#include "kernel/call_error.h"

namespace trnsim::kernel {

void KernelBuilder::dma_gather(const View& dst, const View& table, const View& offsets,
                               DmaOpts opts) {
  dma_indirect("dma_gather", isa::Opcode::kDmaGather, dst, table, offsets, opts);
}

void KernelBuilder::dma_scatter(const View& table, const View& src, const View& offsets,
                                DmaOpts opts) {
  dma_indirect("dma_scatter", isa::Opcode::kDmaScatter, src, table, offsets, opts);
}

void KernelBuilder::dma_indirect(std::string_view call, isa::Opcode op, const View& sbuf,
                                 const View& table, const View& offsets, const DmaOpts& opts) {
  const bool gather = op == isa::Opcode::kDmaGather;
  const std::string_view sbuf_role = gather ? "dst" : "src";
  const std::string_view table_role = gather ? "src" : "dst";
  if (table.space() != isa::Space::kHbm)
    call_error(call, table_role, table, "is the HBM tensor whose rows the offsets pick");
  if (sbuf.space() != isa::Space::kSbuf)
    call_error(call, sbuf_role, sbuf, "is an SBUF tile (one row per partition)");
  if (offsets.space() != isa::Space::kSbuf)
    call_error(call, "offsets", offsets, "is an SBUF [P, 1] tile of row numbers");
  if (opts.trigger && *opts.trigger != isa::Engine::kGpSimd)
    call_error(call, fmt::format("trigger {}: indirect DMAs are triggered by GpSimd, whose "
                                 "software DGE makes their descriptors",
                                 isa::engine_name(*opts.trigger)));
  // A [rows] vector is a table of one-element rows.
  const View rows = table.rank() == 1 ? table.reshape({table.size(0), 1}) : table;
  const isa::Engine trigger = isa::Engine::kGpSimd;
  isa::Instruction in = make(
      op, trigger,
      gather ? std::vector<View>{sbuf, rows, offsets} : std::vector<View>{rows, sbuf, offsets});
  assign_dma_queue(in, trigger);
  if (opts.accumulate && gather)
    call_error(call, "accumulate: a gather writes SBUF rows; a scatter adds into the table");
  in.p.dma_accumulate = opts.accumulate;
  in.p.dma_skip_oob = opts.skip_oob;
  // The table is used whole (every row of it: validation requires that), so dependencies on
  // it are conservative whatever rows the offsets hold at run time.
  std::vector<Use> uses;
  if (gather)
    uses = {{sbuf, true, sbuf_role}, {rows, false, table_role}, {offsets, false, "offsets"}};
  else
    uses = {{rows, true, table_role}, {sbuf, false, sbuf_role}, {offsets, false, "offsets"}};
  if (opts.accumulate) uses.push_back({rows, false, table_role});  // it reads what it adds to
  emit(call, std::move(in), uses);
}

}  // namespace trnsim::kernel
