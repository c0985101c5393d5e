// VALIDATION.md s3: one DMA, HBM -> SBUF, of a [4, 4096] bf16 tensor (32 KiB) on Trn2: 1,416 ns
// (nki-dma-overview). Four partitions fit on one DMA engine (8 partitions per engine,
// HARDWARE.md s4), so this measures one engine's fixed overhead plus its streaming time.
// The published 1,416 ns is the transfer itself (32 KiB / 1,416 ns is the 23 B/ns practical
// per-engine figure of DMA-OV); the ~1.3 us from the trigger's semaphore to the start of data
// movement (DMA-BW) comes before it. Simulated: the engine's busy time for the transfer; the
// note gives the end-to-end program time as well. The engine also spends
// core.dma.descriptor_overhead_ns on each of the four descriptors (one a partition).
#include <fmt/format.h>

#include <algorithm>

#include "arch/arch.h"
#include "core/timing/timing_run.h"
#include "kernel/builder.h"
#include "validate/target_list.h"

namespace trnsim::validate {

std::vector<Record> single_dma_records() {
  const arch::ChipSpec chip = arch::load_chip("trn2");
  kernel::KernelBuilder kb(chip);
  kernel::Tensor x = kb.input("x", num::bf16(), {4, 4096});
  kernel::Tile t = kb.sbuf("t", num::bf16(), {4, 4096});
  kb.dma_copy(t, x);
  const isa::Program prog = kb.build();
  const core::TimingResult r = core::run_timing(chip, prog);
  Picoseconds busy{0};
  for (Picoseconds b : r.dma.engine_busy) busy = std::max(busy, b);
  const double ns = static_cast<double>(busy.v) * 1e-3;
  return {{"dma", "hbm->sbuf [4,4096] bf16", "ns", 1416.0, ns, 0.15, "VALIDATION.md s3",
           fmt::format("trn2, 32 KiB in {} piece(s) on one DMA engine, {:.1f} GB/s; end to end "
                       "(trigger, fixed overhead, transfer) {:.0f} ns{}",
                       r.dma.pieces, 32768.0 / ns, static_cast<double>(r.total.v) * 1e-3,
                       r.ok() ? "" : "; FAULTS: " + r.faults.to_string()),
           // DMA-OV's 23 B/ns per engine is this transfer's rate: the spec takes it from here.
           "core.dma.engine_bandwidth_practical_gbps (trn2)"}};
}

}  // namespace trnsim::validate
