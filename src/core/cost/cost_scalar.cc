// ScalarE (ACT) cost (HARDWARE.md s8.1, s2.4): activation max(MIN_II, N) whatever scale and
// bias are; activation_reduce adds MIN_II for the reduction; activate2 (NC-v4) costs as
// activation and activate2_reduce as activation_reduce (an assumption: NKI says its ALU stage
// and reduction cost nothing more); NC-v4 runs tensor_scalar and tensor_copy in a 2x
// BF16/FP16 mode (AG4), capped by elements_per_cycle / lanes.
#include <algorithm>

#include "core/cost/cost.h"
#include "core/cost/cost_constants.h"
#include "core/cost/cost_operands.h"

namespace trnsim::core {

uint64_t scalar_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  const uint64_t n = streamed_elements(ins);  // N; 2N with a wide stride (s3)
  const uint64_t min_ii = static_cast<uint64_t>(spec.cost.min_ii_cycles);
  switch (ins.op) {
    case isa::Opcode::kActivationReduce:
    case isa::Opcode::kActivate2Reduce:
      return std::max(min_ii, n) + min_ii;
    case isa::Opcode::kTensorCopy:
    case isa::Opcode::kTensorScalar: {
      uint64_t f = 1;
      if (all_fast_class(ins, spec.scalar) && all_operands_in(ins, isa::Space::kSbuf) &&
          all_contiguous(ins)) {
        f = perf_factor(spec.scalar, ins.operands[0].dtype, spec.sbuf.partitions,
                        costk::kScalarPerf);
      }
      return std::max(min_ii, ceil_div(n, f));
    }
    default:  // activation and the other streaming ops
      return std::max(min_ii, n);
  }
}

}  // namespace trnsim::core
