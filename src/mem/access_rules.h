// Which engine may reach which memory, and where an engine access may start (HARDWARE.md s2,
// s3). These are run-time rules of the hardware: breaking one is a fault of the instruction,
// reported like an out-of-range access.
#pragma once

#include <optional>

#include "isa/access_pattern.h"
#include "isa/engine.h"
#include "mem/fault.h"

namespace trnsim::mem {

enum class Access : uint8_t { kRead, kWrite };

// The operand of a compute instruction on engine `e`:
//  - compute engines address only SBUF and PSUM (HBM is reached by DMA);
//  - TensorE reads only SBUF and writes only PSUM (s2.1);
//  - GpSimd has no PSUM access (s2.2, s2.5);
//  - the Sync engine has no datapath: it may only start DMA transfers (s2).
std::optional<Fault> check_engine_space(isa::Engine e, const isa::AccessPattern& ap, Access a);

// The operand of a DMA transfer: SBUF or HBM. PSUM is not a DMA endpoint in trnsim (NKI: PSUM
// must go through SBUF to reach HBM, HARDWARE.md s8).
std::optional<Fault> check_dma_space(const isa::AccessPattern& ap);

// Start partition of an engine access (isa::start_partition_allowed, AG2, HARDWARE.md s3): more
// than 64 partitions start at 0; 33..64 at 0 or 64; 1..32 at 0, 32, 64 or 96. DMA is not
// bound by this rule (it moves one buffer per partition).
std::optional<Fault> check_start_partition(const isa::AccessPattern& ap);

}  // namespace trnsim::mem
