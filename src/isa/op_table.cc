// The op table. One entry per opcode, in opcode.h order (checked at compile time below).
// Engines follow HARDWARE.md s8 (the ISA list, engine in brackets) and s2; operand spaces
// follow s2.1 (TensorE reads SBUF, writes PSUM), s2.2 (GpSimd has no PSUM: validation applies
// that per engine) and s4/s8 (DMA endpoints are SBUF and HBM; PSUM goes through SBUF).
#include "isa/op_table.h"

#include "base/error.h"

namespace trnsim::isa {

namespace {

using enum Opcode;
using enum ParamKey;
using S = Space;

constexpr EngineSet kAnyEngine{Engine::kTensor, Engine::kVector, Engine::kScalar, Engine::kGpSimd,
                               Engine::kSync};
constexpr EngineSet kPe{Engine::kTensor};
constexpr EngineSet kDve{Engine::kVector};
constexpr EngineSet kAct{Engine::kScalar};
constexpr EngineSet kPool{Engine::kGpSimd};
constexpr EngineSet kDvePool{Engine::kVector, Engine::kGpSimd};
constexpr EngineSet kDveActPool{Engine::kVector, Engine::kScalar, Engine::kGpSimd};

constexpr SpaceSet kSbuf{S::kSbuf};
constexpr SpaceSet kPsum{S::kPsum};
constexpr SpaceSet kOnChip{S::kSbuf, S::kPsum};
constexpr SpaceSet kDmaEnd{S::kSbuf, S::kHbm};
constexpr SpaceSet kHbm{S::kHbm};
constexpr SpaceSet kAnyMemory{S::kSbuf, S::kPsum, S::kHbm};

constexpr OperandRole W(std::string_view name, SpaceSet s = kOnChip,
                        DtypeRule d = DtypeRule::kAny) {
  return {name, s, Access::kWrite, d};
}
constexpr OperandRole R(std::string_view name, SpaceSet s = kOnChip,
                        DtypeRule d = DtypeRule::kAny) {
  return {name, s, Access::kRead, d};
}

constexpr ParamKeySet kTile{kTileRow, kTileCol, kTileRows, kTileCols};
constexpr ParamKeySet kActParams{kFunc, kScale, kBias, kAlpha, kRounding};

constexpr OpInfo op(Opcode o, EngineSet e, std::initializer_list<OperandRole> roles,
                    ParamKeySet params, ShapeRule shape, std::string_view doc,
                    Feature feature = Feature::kNone) {
  OpInfo info;
  info.op = o;
  info.engines = e;
  for (const OperandRole& r : roles) info.roles[static_cast<size_t>(info.num_roles++)] = r;
  info.params = params;
  info.feature = feature;
  info.shape = shape;
  info.doc = doc;
  return info;
}

using SR = ShapeRule;
using D = DtypeRule;

constexpr std::array<OpInfo, kNumOpcodes> kTable{
    // Control and synchronisation: any sequencer.
    op(kNop, kAnyEngine, {}, {}, SR::kNone, "does nothing; carries waits and signals"),
    op(kSemWait, kAnyEngine, {}, {}, SR::kNone,
       "stalls the stream until every wait= holds (semaphore >= value)"),
    op(kSemSignal, kAnyEngine, {}, {}, SR::kNone, "adds every signal= delta to its semaphore"),
    op(kRegSet, kAnyEngine, {}, {kRd, kImm}, SR::kNone, "scalar register rd = imm"),
    op(kRegAlu, kAnyEngine, {}, {kRd, kRa, kRb, kImm, kOp0}, SR::kNone,
       "rd = ra op0 rb (op0 imm when rb is unset)"),
    op(kBranch, kAnyEngine, {}, {kTarget, kRa, kRb, kImm, kOp0}, SR::kNone,
       "jump to target when (ra op0 rb-or-imm) != 0; op0=bypass jumps always"),
    // The sequencer's own memory reads and writes (NKI register_load / register_store): one
    // element, any memory, converted to and from a 32-bit integer.
    op(kRegLoad, kAnyEngine, {R("src", kAnyMemory)}, {kRd}, SR::kOneElement,
       "rd = src, one element of SBUF, PSUM or HBM (floats truncate toward zero)"),
    op(kRegStore, kAnyEngine, {W("dst", kAnyMemory)}, {kRa}, SR::kOneElement,
       "dst = ra, one element of SBUF, PSUM or HBM, converted to dst's dtype"),
    // TensorE (s2.1): SBUF in, PSUM out.
    op(kLoadStationary, kPe, {R("stationary", kSbuf, D::kMatmulIn)}, ParamKeySet{kPerfMode} | kTile,
       SR::kLoadStationary,
       "caches stationary [K partitions, M] in the PE array (LS of nc_matmul)"),
    op(kMultiplyMoving, kPe, {W("dst", kPsum, D::kPsumOut), R("moving", kSbuf, D::kMatmulIn)},
       ParamKeySet{kAcc, kPerfMode, kRounding} | kTile, SR::kMultiplyMoving,
       "dst[M, N] (+)= stationary.T @ moving[K, N] in fp32, per acc (MM of nc_matmul)"),
    op(kMatmulMx, kPe,
       {W("dst", kPsum, D::kPsumOut), R("stationary", kSbuf, D::kMxData),
        R("moving", kSbuf, D::kMxData), R("stationary_scale", kSbuf, D::kMxScale),
        R("moving_scale", kSbuf, D::kMxScale)},
       {kAcc, kRounding, kTileRow, kTileRows}, SR::kMatmulMx,
       "MX matmul: dst[M, N] (+)= dequant(stationary).T @ dequant(moving), K = 4 x partitions",
       Feature::kMxMatmul),
    op(kTransposePe, kPe, {W("dst", kPsum), R("src", kSbuf)}, {kTranspose}, SR::kTransposePe,
       "dst[F, P] = src[P, F] through the PE array (identity matmul)"),
    // ScalarE (s2.4).
    op(kActivation, kAct, {W("dst"), R("src")}, kActParams, SR::kElementwise,
       "dst = func(src * scale + bias)"),
    op(kActivationReduce, kAct, {W("dst"), W("reduce_dst"), R("src")}, kActParams, SR::kReduceAccum,
       "dst = func(src * scale + bias); reduce_dst[P, 1] = sum of dst over the free dims"),
    op(kActivate2, kAct, {W("dst"), R("src")},
       {kFunc, kOp0, kArg0, kReverse0, kOp1, kArg1, kReverse1, kAlpha, kRounding}, SR::kActivate2,
       "dst = func((src op0 arg0) op1 arg1), the ALU stage in fp32 (op0 / op1: mult and add or "
       "subtract, add, subtract, bypass)",
       Feature::kActivate2),
    op(kActivate2Reduce, kAct, {W("dst"), W("reduce_dst"), R("src")},
       {kFunc, kOp0, kArg0, kReverse0, kOp1, kArg1, kReverse1, kAlpha, kReduceOp, kRounding},
       SR::kActivate2,
       "activate2; reduce_dst[P, 1] = reduce_op (add, max, min, abs_max, abs_min) of dst's row",
       Feature::kActivate2),
    // VectorE / GpSimd element-wise ops and reductions (s2.3, s2.5, s8).
    op(kTensorTensor, kDvePool, {W("dst"), R("in0"), R("in1")}, {kOp0, kRounding}, SR::kElementwise,
       "dst = in0 op0 in1"),
    op(kTensorScalar, kDveActPool, {W("dst"), R("src")},
       {kOp0, kArg0, kReverse0, kOp1, kArg1, kReverse1, kRounding}, SR::kElementwise,
       "dst = (src op0 arg0) op1 arg1"),
    op(kScalarTensorTensor, kDve, {W("dst"), R("in0"), R("in1")},
       {kOp0, kArg0, kReverse0, kOp1, kReverse1, kRounding}, SR::kElementwise,
       "dst = (in0 op0 arg0) op1 in1"),
    op(kTensorReduce, kDve, {W("dst"), R("src")}, {kReduceOp, kReduceAxes, kRounding},
       SR::kReduceFree, "dst = reduce_op over the innermost reduce_axes free dims of src"),
    op(kTensorCopy, kDveActPool, {W("dst"), R("src")}, {kRounding}, SR::kElementwise,
       "dst = src, cast to dst's dtype"),
    op(kTensorTensorScan, kDve, {W("dst"), R("in0"), R("in1")}, {kOp0, kOp1, kArg0, kRounding},
       SR::kElementwise, "r[i] = (in0[i] op0 r[i-1]) op1 in1[i] along the free dims, r[-1] = arg0"),
    op(kTensorScalarReduce, kDve, {W("dst"), W("reduce_dst"), R("src")},
       {kOp0, kArg0, kReverse0, kReduceOp, kRounding}, SR::kReduceAccum,
       "dst = src op0 arg0; reduce_dst[P, 1] = reduce_op of dst over the free dims"),
    op(kTensorScalarCumulative, kDve, {W("dst"), R("src")},
       {kOp0, kArg0, kReverse0, kOp1, kArg1, kAccumulate, kRounding}, SR::kCumulative,
       "r = op1(src[i] op0 arg0, r) along the free dims, dst[i] = r; r starts at arg1, or with "
       "accumulate at the lane's VectorE accumulator, which keeps the last r"),
    op(kMemset, kDvePool, {W("dst")}, {kValue}, SR::kNone, "dst = value"),
    op(kIota, kPool, {W("dst")}, {kIotaBase, kChannelMultiplier}, SR::kNone,
       "dst[p, i] = iota_base + channel_multiplier * p + i (i: flat free index)"),
    op(kSelect, kDve, {W("dst"), R("predicate"), R("on_true"), R("on_false")}, {kRounding},
       SR::kElementwise, "dst = predicate != 0 ? on_true : on_false"),
    op(kAffineSelect, kPool, {W("dst"), R("src")}, {kOp0, kIotaBase, kChannelMultiplier, kValue},
       SR::kElementwise, "dst = (iota_base + channel_multiplier * p + i) op0 0 ? src : value"),
    op(kBnStats, kDve, {W("dst"), R("src")}, {}, SR::kBnStats,
       "dst[P, 6] = count, mean, var * count of the even and odd elements of src[P, <= 512]"),
    op(kBnAggr, kDve, {W("dst"), R("src")}, {}, SR::kBnAggr,
       "dst[P, 2] = mean, variance combined from bn_stats groups src[P, 6k]"),
    op(kReciprocal, kDve, {W("dst"), R("src")}, {kRounding}, SR::kElementwise, "dst = 1 / src"),
    op(kMax8, kDve, {W("dst"), R("src")}, {}, SR::kMax8,
       "dst[P, 8] = the 8 largest values of each partition of src[P, 8 .. 16384]"),
    op(kFindIndex8, kDve, {W("dst", kOnChip, D::kIndex8), R("data"), R("vals")}, {},
       SR::kFindIndex8,
       "dst[P, 8] = the position in data[P, 8 .. 16384] of each of vals[P, 8], ascending for "
       "repeated values"),
    op(kMatchReplace8, kDve, {W("dst"), W("dst_idx", kOnChip, D::kIndex8), R("data"), R("vals")},
       {kValue}, SR::kMatchReplace8,
       "dst = data[P, <= 16384] with the first occurrence of each of vals[P, 8] replaced by value; "
       "dst_idx[P, 8] = their positions (vals taken from the last)"),
    op(kRangeSelect, kDve, {W("dst"), W("reduce_res"), R("on_true")},
       {kOp0, kArg0, kOp1, kArg1, kIotaBase, kValue, kReduceOp, kAccumulate, kRounding},
       SR::kReduceAccum,
       "dst = (iota_base + i) op0 arg0 and (iota_base + i) op1 arg1 ? on_true : value (i: flat "
       "free index); reduce_res[P, 1] = max of dst, with accumulate also of the VectorE "
       "accumulator's earlier max",
       Feature::kRangeSelect),
    // The engines' random generators (NKI nl.rand, random_seed, dropout, rand_set_state):
    // state per lane (partition), kept by the engine between instructions.
    op(kRandSeed, kDvePool, {R("src", kOnChip, D::kSeed)}, {}, SR::kRandSeed,
       "seed the engine's generator: lane p from row p of src (every lane from row 0 when src "
       "has one partition); its draws start again"),
    op(kRand, kDvePool, {W("dst")}, {}, SR::kNone,
       "dst = uniform [0, 1) values, the next draws of each lane's generator"),
    op(kRng, kDvePool, {W("dst", kOnChip, D::kInteger)}, {}, SR::kNone,
       "dst = the next 32-bit words of each lane's generator, the low bits dst's type holds"),
    op(kRand2, kDve, {W("dst")}, {kArg0, kArg1, kRounding}, SR::kElementwise,
       "dst = arg0 + u (arg1 - arg0) in fp32, u the lane's next uniform [0, 1) draw",
       Feature::kRand2),
    op(kRandState, kDvePool, {W("dst", kOnChip, D::kUint32)}, {}, SR::kRandState,
       "dst[p] = lane p's generator state: seed (2 words), draws since (2 words), a marker, 0s; "
       "rand_seed of those words restores it"),
    op(kDropout, kDve, {W("dst"), R("src")}, {kArg0}, SR::kElementwise,
       "dst = src, or 0 where the lane's next draw is below arg0 (the drop probability)"),
    op(kTransposeDve, kDve, {W("dst"), R("src")}, {}, SR::kTransposeDve,
       "dst[F, P] = src[P, F] within one 32-partition reshape bank (P, F <= 32)"),
    op(kStreamShuffle, kDve, {W("dst"), R("src")}, {kShuffle}, SR::kStreamShuffle,
       "dst partition 32 q + i = src partition 32 q + shuffle[i] in each quadrant q (255: dst "
       "unchanged); same dtype and elements per partition"),
    op(kExponential, kDve, {W("dst"), R("src")}, {kArg0, kRounding}, SR::kElementwise,
       "dst = exp(src - arg0); running sum in the VectorE accumulator registers",
       Feature::kFastExponential),
    op(kQuantizeMx, kDve,
       {W("dst", kSbuf, D::kMxFp8), W("scale", kSbuf, D::kMxScale),
        R("src", kOnChip, D::kBf16Fp16)},
       {}, SR::kQuantizeMx, "dst = MXFP8 of src, scale[P, F/4] = E8M0 block scales (block 8 x 4)",
       Feature::kQuantizeMx),
    op(kPartitionReduce, kPool, {W("dst", kSbuf), R("src", kSbuf)}, {kReduceOp, kRounding},
       SR::kPartitionReduce, "dst[1, F] = reduce_op of src[P, F] across partitions"),
    op(kNGather, kPool, {W("dst", kSbuf), R("data", kSbuf), R("indices", kSbuf, D::kUint32)}, {},
       SR::kNGather,
       "dst[p, j] = data[p, indices[p, j]], data's free elements counted in order (unchanged "
       "codes)"),
    op(kLocalGather, kPool, {W("dst", kSbuf), R("src", kSbuf), R("index", kSbuf, D::kUint16)},
       {kGatherElems, kGatherIndices}, SR::kLocalGather,
       "each 16-partition GpSimd core c: its index slice read partition first, k-th index i_k; "
       "dst[p, k * elems + e] = src[p, i_k + e] for the core's partitions p (unchanged codes)"),
    op(kSequenceBounds, kPool,
       {W("dst", kSbuf, D::kFp32Int32), R("segment_ids", kSbuf, D::kFp32Int32)}, {},
       SR::kSequenceBounds,
       "dst[0, i] = first position of the run of equal ids holding i, dst[0, n + i] = one past "
       "its last; id 0 (padding): n and -1"),
    op(kNonzeroWithCount, kPool, {W("dst", kSbuf, D::kInt32), R("src", kSbuf, D::kFp32Int32)},
       {kIotaBase, kValue}, SR::kNonzeroWithCount,
       "partitions 0, 16, ..., 112 (one per GpSimd core): dst = the positions + iota_base of "
       "src's nonzero elements, then value (padding), then their count; other partitions kept",
       Feature::kNonzeroWithCount),
    // DMA (s4): started by a stream, runs on the core's DMA queue `queue`.
    op(kDmaCopy, kAnyEngine, {W("dst", kDmaEnd), R("src", kDmaEnd)},
       {kQueue, kAccumulate, kRounding}, SR::kDmaCopy,
       "dst = src (cast through fp32), or dst += src with accumulate"),
    op(kDmaTranspose, kAnyEngine, {W("dst", kSbuf), R("src", kDmaEnd)}, {kQueue}, SR::kDmaTranspose,
       "dst[F, P] = src[P, F] during the copy (2- and 4-byte dtypes)", Feature::kDmaTranspose),
    // Indirect DMA (s4, DGE): the HBM side is a tensor's [rows, F] and each SBUF partition p
    // moves row offsets[p], read when the transfer runs. Descriptors for such transfers are
    // made by software DGE on GpSimd (DGE: the only mode with gather / scatter), so only the
    // pool stream triggers them.
    op(kDmaGather, kPool, {W("dst", kSbuf), R("src", kHbm), R("offsets", kSbuf, D::kRowIndex)},
       {kQueue, kRounding, kSkipOob}, SR::kDmaIndirect,
       "dst[p] = src[offsets[p]]: row gather from an HBM tensor [rows, F] (cast through fp32); "
       "skip_oob: partition p keeps its values where offsets[p] is outside the table"),
    op(kDmaScatter, kPool, {W("dst", kHbm), R("src", kSbuf), R("offsets", kSbuf, D::kRowIndex)},
       {kQueue, kAccumulate, kRounding, kSkipOob}, SR::kDmaIndirect,
       "dst[offsets[p]] = src[p]: row scatter into an HBM tensor [rows, F]; a repeated row "
       "keeps the last partition's; with accumulate dst[offsets[p]] += src[p] (the DMA's "
       "read-modify-write, NKI atomic_rmw), partition by partition; skip_oob: a partition "
       "whose row is outside the table writes nothing"),
    // Between the physical cores of a logical core (s6). The engine that issues core_barrier
    // does the remote semaphore update and the local wait (NKI: engine=, gpsimd by default).
    op(kCoreBarrier, kAnyEngine, {}, {}, SR::kNone,
       "waits until every core of the logical core has reached its matching core_barrier",
       Feature::kCoreToCore),
    op(kSendRecv, kAnyEngine, {W("dst", kSbuf), R("src", kSbuf)},
       {kQueue, kSendTo, kRecvFrom, kPipe}, SR::kSendRecv,
       "src goes to core send_to's dst, core recv_from's src arrives in dst (DMA, by pipe)",
       Feature::kCoreToCore),
    // Between ranks (logical cores, on this chip or others): the collective DMA rings run it
    // once every rank of the replica group's list has issued its matching one (s5).
    op(kCollective, kAnyEngine, {W("dst", kDmaEnd), R("src", kDmaEnd)},
       {kQueue, kCollectiveKind, kReduceOp, kReplicaGroup, kCollectiveOuter, kSendTo, kRecvFrom},
       SR::kCollective,
       "dst from the src of every rank of the replica group's list that holds this rank: "
       "all_reduce, all_gather, reduce_scatter, all_to_all, permute (nki.collectives)"),
    op(kCollectiveV, kAnyEngine,
       {W("dst", kDmaEnd), W("metadata", kDmaEnd, D::kUint32), R("src", kDmaEnd)},
       {kQueue, kCollectiveKind, kReplicaGroup, kCollectiveFlags}, SR::kCollectiveV,
       "all_to_all_v / all_gather_v: chunks of sizes and places the uint32 metadata holds when "
       "it runs (rows: send counts, send displacements, receive counts, written back, and "
       "receive displacements), one column per rank of the list"),
};

constexpr bool table_in_opcode_order() {
  for (size_t i = 0; i < kTable.size(); ++i)
    if (static_cast<size_t>(kTable[i].op) != i) return false;
  return true;
}
static_assert(table_in_opcode_order(), "op table entries must follow opcode.h order");

constexpr std::array<std::string_view, kNumOpcodes> kMnemonics{
#define TRNSIM_OPCODE_MNEMONIC(id, mnem) mnem,
    TRNSIM_OPCODES(TRNSIM_OPCODE_MNEMONIC)
#undef TRNSIM_OPCODE_MNEMONIC
};

}  // namespace

std::span<const OpInfo> op_table() { return kTable; }

const OpInfo& op_info(Opcode o) {
  const auto i = static_cast<size_t>(o);
  TRNSIM_ASSERT(i < kTable.size());
  return kTable[i];
}

std::string_view mnemonic(Opcode o) {
  const auto i = static_cast<size_t>(o);
  return i < kMnemonics.size() ? kMnemonics[i] : std::string_view("?");
}

std::optional<Opcode> find_opcode(std::string_view m) {
  for (size_t i = 0; i < kMnemonics.size(); ++i)
    if (kMnemonics[i] == m) return static_cast<Opcode>(i);
  return std::nullopt;
}

const OperandRole& operand_role(Opcode o, int index) {
  const OpInfo& info = op_info(o);
  return index >= 0 && index < info.num_roles ? info.roles[static_cast<size_t>(index)]
                                              : kColumnRole;
}

bool has_feature(const arch::CoreSpec& core, Feature f) {
  const arch::FeatureSpec& x = core.features;
  switch (f) {
    case Feature::kNone:
      return true;
    case Feature::kQuantizeMx:
      return x.quantize_mx;
    case Feature::kFastExponential:
      return x.fast_exponential;
    case Feature::kMxMatmul:
      return x.mx_matmul;
    case Feature::kDmaTranspose:
      return core.dma.transpose;
    case Feature::kDoubleRowFp8:
      return x.double_row_fp8;
    case Feature::kBf16Psum:
      return x.bf16_psum;
    case Feature::kBitExactTranspose:
      return x.bit_exact_transpose;
    case Feature::kCoreToCore:
      return x.core_to_core;
    case Feature::kRangeSelect:
      return x.range_select;
    case Feature::kActivate2:
      return x.activate2;
    case Feature::kNonzeroWithCount:
      return x.nonzero_with_count;
    case Feature::kRand2:
      return x.rand2;
  }
  return false;
}

bool is_dma(Opcode op) {
  return op == Opcode::kDmaCopy || op == Opcode::kDmaTranspose || op == Opcode::kDmaGather ||
         op == Opcode::kDmaScatter || is_peer_transfer(op);
}

}  // namespace trnsim::isa
