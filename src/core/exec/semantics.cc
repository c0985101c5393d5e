#include "core/exec/semantics.h"

namespace trnsim::core {

using isa::Opcode;

SemanticsFn semantics_for(Opcode op) {
  switch (op) {
    case Opcode::kNop:
    case Opcode::kSemWait:
    case Opcode::kSemSignal:
      return exec_nop;
    case Opcode::kRegSet:
    case Opcode::kRegAlu:
    case Opcode::kBranch:
      return exec_control;
    case Opcode::kRegLoad:
      return exec_reg_load;
    case Opcode::kRegStore:
      return exec_reg_store;
    case Opcode::kLoadStationary:
      return exec_load_stationary;
    case Opcode::kMultiplyMoving:
      return exec_multiply_moving;
    case Opcode::kMatmulMx:
      return exec_matmul_mx;
    case Opcode::kTransposePe:
      return exec_transpose_pe;
    case Opcode::kActivation:
    case Opcode::kActivationReduce:
      return exec_activation;
    case Opcode::kTensorTensor:
      return exec_tensor_tensor;
    case Opcode::kTensorScalar:
      return exec_tensor_scalar;
    case Opcode::kScalarTensorTensor:
      return exec_scalar_tensor_tensor;
    case Opcode::kTensorReduce:
      return exec_tensor_reduce;
    case Opcode::kTensorCopy:
      return exec_tensor_copy;
    case Opcode::kTensorTensorScan:
      return exec_tensor_tensor_scan;
    case Opcode::kTensorScalarReduce:
      return exec_tensor_scalar_reduce;
    case Opcode::kMemset:
      return exec_memset;
    case Opcode::kIota:
      return exec_iota;
    case Opcode::kSelect:
      return exec_select;
    case Opcode::kAffineSelect:
      return exec_affine_select;
    case Opcode::kBnStats:
      return exec_bn_stats;
    case Opcode::kBnAggr:
      return exec_bn_aggr;
    case Opcode::kReciprocal:
      return exec_reciprocal;
    case Opcode::kMax8:
      return exec_max8;
    case Opcode::kFindIndex8:
      return exec_find_index8;
    case Opcode::kMatchReplace8:
      return exec_match_replace8;
    case Opcode::kRangeSelect:
      return exec_range_select;
    case Opcode::kRandSeed:
      return exec_rand_seed;
    case Opcode::kRand:
      return exec_rand;
    case Opcode::kRng:
      return exec_rng;
    case Opcode::kRand2:
      return exec_rand2;
    case Opcode::kRandState:
      return exec_rand_state;
    case Opcode::kDropout:
      return exec_dropout;
    case Opcode::kTransposeDve:
      return exec_transpose_dve;
    case Opcode::kStreamShuffle:
      return exec_stream_shuffle;
    case Opcode::kActivate2:
    case Opcode::kActivate2Reduce:
      return exec_activate2;
    case Opcode::kNGather:
      return exec_n_gather;
    case Opcode::kLocalGather:
      return exec_local_gather;
    case Opcode::kSequenceBounds:
      return exec_sequence_bounds;
    case Opcode::kNonzeroWithCount:
      return exec_nonzero_with_count;
    case Opcode::kTensorScalarCumulative:
      return exec_tensor_scalar_cumulative;
    case Opcode::kExponential:
      return exec_exponential;
    case Opcode::kQuantizeMx:
      return exec_quantize_mx;
    case Opcode::kPartitionReduce:
      return exec_partition_reduce;
    case Opcode::kDmaCopy:
      return exec_dma_copy;
    case Opcode::kDmaTranspose:
      return exec_dma_transpose;
    case Opcode::kDmaGather:
    case Opcode::kDmaScatter:
      return exec_dma_indirect;
    case Opcode::kCoreBarrier:
      return exec_nop;  // a group of one core: nothing to wait for (the chip layer pairs cores)
    case Opcode::kSendRecv:
      return exec_sendrecv_alone;
  }
  return nullptr;
}

}  // namespace trnsim::core
