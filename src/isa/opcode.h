// Opcodes. The list is declared once here; everything else about an op (engines, operand
// roles, dtypes, generation feature, text syntax) is in the op table (isa/op_table.h), and
// its semantics and cost are registered per op family (a test checks none is missing).
#pragma once

#include <cstdint>

namespace trnsim::isa {

#define TRNSIM_OPCODES(X)                                                                         \
  /* control and synchronisation (any engine) */                                                  \
  X(kNop, "nop")                                                                                  \
  X(kSemWait, "sem_wait")     /* wait until a semaphore reaches a value */                        \
  X(kSemSignal, "sem_signal") /* add to a semaphore */                                            \
  X(kRegSet, "reg_set")       /* scalar register = immediate */                                   \
  X(kRegAlu, "reg_alu")       /* scalar register ALU op */                                        \
  X(kBranch, "branch")        /* conditional branch on scalar registers (loops) */                \
  X(kRegLoad, "reg_load")     /* scalar register = one element of memory */                       \
  X(kRegStore, "reg_store")   /* one element of memory = scalar register */                       \
  /* TensorE */                                                                                   \
  X(kLoadStationary, "load_stationary")                                                           \
  X(kMultiplyMoving, "multiply_moving")                                                           \
  X(kMatmulMx, "matmul_mx") /* NC-v4 MX matmul with fused dequantisation */                       \
  X(kTransposePe, "transpose_pe")                                                                 \
  /* ScalarE */                                                                                   \
  X(kActivation, "activation") /* func(x*scale+bias), optional add-reduction */                   \
  X(kActivationReduce, "activation_reduce")                                                       \
  X(kActivate2, "activate2")              /* NC-v4 func((x op0 arg0) op1 arg1) */                 \
  X(kActivate2Reduce, "activate2_reduce") /* the same, and reduce_op of each row */               \
  /* VectorE / GpSimd element-wise and reductions */                                              \
  X(kTensorTensor, "tensor_tensor")                                                               \
  X(kTensorScalar, "tensor_scalar")                                                               \
  X(kScalarTensorTensor, "scalar_tensor_tensor")                                                  \
  X(kTensorReduce, "tensor_reduce")                                                               \
  X(kTensorCopy, "tensor_copy")                                                                   \
  X(kTensorTensorScan, "tensor_tensor_scan")                                                      \
  X(kTensorScalarReduce, "tensor_scalar_reduce")                                                  \
  X(kTensorScalarCumulative, "tensor_scalar_cumulative") /* running op1 of (src op0 arg0) */      \
  X(kMemset, "memset")                                                                            \
  X(kIota, "iota")                                                                                \
  X(kSelect, "select")                                                                            \
  X(kAffineSelect, "affine_select")                                                               \
  X(kBnStats, "bn_stats")                                                                         \
  X(kBnAggr, "bn_aggr")                                                                           \
  X(kReciprocal, "reciprocal")                                                                    \
  X(kMax8, "max8")                                                                                \
  X(kFindIndex8, "find_index8")           /* indices of 8 values per partition */                 \
  X(kMatchReplace8, "match_replace8")     /* those values replaced by an immediate */             \
  X(kRangeSelect, "range_select")         /* NC-v3 free index in a range ? src : fill, max */     \
  X(kRandSeed, "rand_seed")               /* seed the engine's generator, per lane */             \
  X(kRand, "rand")                        /* uniform [0, 1) draws of the generator */             \
  X(kRng, "rng")                          /* raw 32-bit words of the generator, low bits kept */  \
  X(kRand2, "rand2")                      /* NC-v4 VectorE uniform [arg0, arg1) draws */          \
  X(kRandState, "rand_get_state")         /* the lanes' generator state words */                  \
  X(kDropout, "dropout")                  /* src, or 0 where a draw < the probability */          \
  X(kTransposeDve, "transpose_dve")       /* 32x32 VectorE transpose */                           \
  X(kStreamShuffle, "stream_shuffle")     /* VectorE moves in 32-partition quadrants */           \
  X(kExponential, "exponential")          /* NC-v4 VectorE exp(x - m) with running sum */         \
  X(kQuantizeMx, "quantize_mx")           /* NC-v4 VectorE BF16/FP16 -> MXFP8 + E8M0 scales */    \
  X(kPartitionReduce, "partition_reduce") /* GpSimd cross-partition reduction */                  \
  X(kNGather, "n_gather")                 /* GpSimd gather within each partition */               \
  X(kLocalGather, "local_gather")         /* GpSimd gather by each 16-partition core's list */    \
  X(kSequenceBounds, "sequence_bounds")   /* GpSimd [start, end) of each segment id's run */      \
  X(kNonzeroWithCount, "nonzero_with_count") /* NC-v3 GpSimd nonzero positions and count */       \
  /* DMA (started from a stream, runs on a DMA queue) */                                          \
  X(kDmaCopy, "dma_copy")                                                                         \
  X(kDmaTranspose, "dma_transpose")                                                               \
  X(kDmaGather, "dma_gather")   /* indirect: SBUF partition p <- HBM row offsets[p] */            \
  X(kDmaScatter, "dma_scatter") /* indirect: HBM row offsets[p] <- SBUF partition p */            \
  /* between the physical cores of a logical core (NC-v3+, HARDWARE.md s6) */                     \
  X(kCoreBarrier, "core_barrier") /* every core of the group reaches it before any goes on */     \
  X(kSendRecv, "sendrecv")        /* SBUF to a peer core's SBUF, paired by pipe */                \
  X(kCollective, "collective")    /* with the other ranks of a replica group (nki.collectives) */ \
  X(kCollectiveV, "collective_v") /* the same, sizes read from a metadata tensor when it runs */

enum class Opcode : uint16_t {
#define TRNSIM_OPCODE_ENUM(id, mnemonic) id,
  TRNSIM_OPCODES(TRNSIM_OPCODE_ENUM)
#undef TRNSIM_OPCODE_ENUM
};

inline constexpr int kNumOpcodes = 0
#define TRNSIM_OPCODE_COUNT(id, mnemonic) +1
    TRNSIM_OPCODES(TRNSIM_OPCODE_COUNT)
#undef TRNSIM_OPCODE_COUNT
    ;

}  // namespace trnsim::isa
