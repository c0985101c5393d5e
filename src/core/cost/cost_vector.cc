// VectorE (DVE) cost: the HARDWARE.md s8.1 table (ISA-OLD, N = elements per partition,
// MIN_II = cost.min_ii_cycles), then the NC-v3/v4 performance modes of s2.3, whose factor is
// capped by elements_per_cycle / lanes (NC-v2: 128 / 128 = 1, so the v2 table is unchanged).
#include <algorithm>

#include "core/cost/cost.h"
#include "core/cost/cost_constants.h"
#include "core/cost/cost_operands.h"

namespace trnsim::core {

namespace {

bool is_add_sub_mult(isa::AluOp op) {
  return op == isa::AluOp::kAdd || op == isa::AluOp::kSubtract || op == isa::AluOp::kMult;
}

// Performance-mode factor of the 1-input streaming ops (tensor_copy, tensor_scalar): 4x with
// SBUF in and out and a contiguous inner dim, 2x otherwise (AG3); 16-bit floats (and FP8 where
// the engine lists an FP8 rate, AG4) only.
uint64_t one_input_perf(const isa::Instruction& ins, const arch::CoreSpec& spec,
                        const arch::EngineSpec& eng) {
  if (!all_fast_class(ins, eng)) return 1;
  const bool full = all_operands_in(ins, isa::Space::kSbuf) && all_contiguous(ins);
  const uint64_t cap = full ? costk::kVectorPerfFull : costk::kVectorPerfReduced;
  return perf_factor(eng, ins.operands[0].dtype, spec.sbuf.partitions, cap);
}

// tensor_tensor: 2x with both inputs in SBUF and every operand 16-bit float (AG3).
uint64_t two_input_perf(const isa::Instruction& ins, const arch::CoreSpec& spec,
                        const arch::EngineSpec& eng) {
  if (!all_bf16_fp16(ins) || any_source_in(ins, isa::Space::kPsum)) return 1;
  return perf_factor(eng, ins.operands[0].dtype, spec.sbuf.partitions, costk::kVectorPerfReduced);
}

// tensor_copy_predicated (opcode `select`): N when the source and predicate live in different
// memories, 2N when they share one (ISA-OLD).
bool sources_in_different_memories(const isa::Instruction& ins) {
  return ins.num_operands >= 3 && ins.operands[1].space != ins.operands[2].space;
}

}  // namespace

uint64_t elementwise_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec,
                            const arch::EngineSpec& eng) {
  const uint64_t n = streamed_elements(ins);  // N; 2N with a wide stride (s3)
  const uint64_t min_ii = static_cast<uint64_t>(spec.cost.min_ii_cycles);
  const auto floor_ii = [min_ii](uint64_t c) { return std::max(min_ii, c); };
  using isa::Opcode;
  switch (ins.op) {
    case Opcode::kTensorCopy:
    case Opcode::kTensorScalar:
      return floor_ii(ceil_div(n, one_input_perf(ins, spec, eng)));
    case Opcode::kTensorTensor: {
      // 2N; N with one input in PSUM, or all-bf16 add/sub/mult in SBUF at unit stride (v2).
      const bool one_pass = any_source_in(ins, isa::Space::kPsum) ||
                            (all_bf16(ins) && is_add_sub_mult(ins.p.op0) &&
                             all_operands_in(ins, isa::Space::kSbuf) && all_contiguous(ins));
      const uint64_t base = one_pass ? n : costk::kTwoPass * n;
      return floor_ii(ceil_div(base, two_input_perf(ins, spec, eng)));
    }
    case Opcode::kTensorReduce: {
      const bool half = all_bf16(ins) && (ins.p.reduce_op == isa::AluOp::kAdd ||
                                          ins.p.reduce_op == isa::AluOp::kMax);
      return half ? ceil_div(n, costk::kHalfRate) : n;
    }
    case Opcode::kScalarTensorTensor: {
      const bool fast = all_bf16(ins) && ins.p.op0 == isa::AluOp::kSubtract &&
                        ins.p.op1 == isa::AluOp::kMult && n % costk::kTwoPass == 0;
      return fast ? n : costk::kTwoPass * n;
    }
    case Opcode::kTensorTensorScan:
      return floor_ii(costk::kTwoPass * n);
    case Opcode::kTensorScalarReduce:
      return floor_ii(n) + min_ii;
    case Opcode::kMemset: {
      const bool half = ins.p.value == 0.0 && ins.num_operands > 0 &&
                        (ins.operands[0].dtype.dtype == num::Dtype::kBf16 ||
                         ins.operands[0].dtype.dtype == num::Dtype::kFp16);
      return floor_ii(half ? ceil_div(n, costk::kHalfRate) : n);
    }
    case Opcode::kBnAggr:
      return floor_ii(ceil_div(costk::kBnAggrNum * n, costk::kBnAggrDen));
    case Opcode::kReciprocal:
      return floor_ii(costk::kVectorReciprocal * n);
    case Opcode::kSelect:
      return floor_ii(sources_in_different_memories(ins) ? n : costk::kTwoPass * n);
    case Opcode::kMax8:
      return n;
    case Opcode::kExponential: {
      // NC-v4: 4x the throughput of ScalarE exp, whose cost is max(MIN_II, N) (AG4).
      const uint64_t speedup = spec.features.fast_exponential ? costk::kFastExponentialSpeedup : 1;
      return floor_ii(ceil_div(n, speedup));
    }
    case Opcode::kQuantizeMx:
      return floor_ii(ceil_div(n, costk::kQuantizeMxElementsPerCycle));
    default:  // bn_stats, transpose_dve, and the other 1-input ops: max(MIN_II, N)
      return floor_ii(n);
  }
}

uint64_t vector_cycles(const isa::Instruction& ins, const arch::CoreSpec& spec) {
  return elementwise_cycles(ins, spec, spec.vector);
}

}  // namespace trnsim::core
