// GpSimd (POOL) cost (HARDWARE.md s8.1): iota and affine_select cost GPSIMD_START + N
// (ISA-OLD). The table gives nothing for GpSimd's element-wise ops; trnsim charges
// GPSIMD_START plus the VectorE table on GpSimd's own datapath (128 lanes: 8 cores x 16 fp32
// lanes, s2.5), an assumption to revisit when measurements appear. The index ops write one
// element per cycle after GPSIMD_START (an assumption, as for iota): local_gather,
// sequence_bounds and nonzero_with_count once; nc_n_gather is n = ceil(elements / 512)
// instructions (NKI API reference), each paying the start.
#include <algorithm>

#include "core/cost/cost.h"
#include "core/cost/cost_operands.h"

namespace trnsim::core {

uint64_t gpsimd_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  const uint64_t start = static_cast<uint64_t>(spec.cost.gpsimd_start_cycles);
  const uint64_t n = streamed_elements(ins);  // N; 2N with a wide stride (s3)
  switch (ins.op) {
    case isa::Opcode::kIota:
    case isa::Opcode::kAffineSelect:
    case isa::Opcode::kPartitionReduce:  // assumption: one pass over the free dim
    case isa::Opcode::kSequenceBounds:
    case isa::Opcode::kNonzeroWithCount:
      return start + n;
    case isa::Opcode::kLocalGather:
      return start + static_cast<uint64_t>(ins.operands[0].free_elements());
    case isa::Opcode::kNGather: {
      constexpr uint64_t kGroup = 512;
      const auto out = static_cast<uint64_t>(ins.operands[0].free_elements());
      return (out + kGroup - 1) / kGroup * start + out;
    }
    default:
      return start + elementwise_cycles(ins, spec, spec.gpsimd);
  }
}

}  // namespace trnsim::core
