// The op table: ONE declaration per opcode (op_table.cc) of everything the rest of trnsim needs
// to know about an op without running it: the engines that may issue it, its operand roles in
// order (written operands first), the Params keys it takes, the generation feature it needs,
// the shape rule its operands obey and a one-line doc. The assembler, disassembler, validation
// and `trnsim isa` are all driven by it (STYLE.md practice 5); tests/cpp/isa/op_table_test.cc
// checks it against itself (practice 6).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "arch/core_spec.h"
#include "isa/access_pattern.h"
#include "isa/engine.h"
#include "isa/instruction.h"
#include "isa/names.h"
#include "isa/opcode.h"
#include "isa/param_keys.h"

namespace trnsim::isa {

struct SpaceSet {
  uint8_t bits = 0;
  constexpr SpaceSet() = default;
  constexpr SpaceSet(std::initializer_list<Space> ss) {
    for (Space s : ss) bits |= static_cast<uint8_t>(1u << static_cast<unsigned>(s));
  }
  constexpr bool has(Space s) const { return (bits >> static_cast<unsigned>(s)) & 1u; }
};

enum class Access : uint8_t { kRead, kWrite };

// What formats an operand slot accepts. Rules that depend on the generation (which FP8
// formats TensorE takes, what PSUM may hold) are resolved against the spec by validation.
enum class DtypeRule : uint8_t {
  kAny,
  kMatmulIn,   // fp32, tf32, bf16, fp16, or one of the generation's numerics.tensor_fp8_formats
  kPsumOut,    // a matmul result in PSUM: fp32, or a dtype in the generation's psum.dtypes
  kMxData,     // MX element data: fp8_e4m3fn, fp8_e5m2, fp4_e2m1 (x4 in the innermost dim)
  kMxScale,    // MX block scales: e8m0 (or uint8, the legacy spelling)
  kBf16Fp16,   // bf16 or fp16
  kMxFp8,      // fp8_e4m3fn or fp8_e5m2
  kRowIndex,   // int32 or uint32: row numbers of an indirect DMA's offsets
  kIndex8,     // uint16 or uint32: positions found by find_index8 / match_replace8
  kSeed,       // int32 or uint32: random generator seeds
  kUint32,     // uint32: nc_n_gather's element positions
  kUint16,     // uint16: local_gather's element offsets
  kFp32Int32,  // fp32 or int32: segment ids, nonzero_with_count's input
  kInt32,      // int32: nonzero_with_count's positions and count
  kInteger,    // an integer type: rng's raw words
};
inline constexpr NameTable<DtypeRule, 15> kDtypeRuleNames{{{
    {DtypeRule::kAny, "any"},
    {DtypeRule::kMatmulIn, "matmul_in"},
    {DtypeRule::kPsumOut, "psum_out"},
    {DtypeRule::kMxData, "mx_data"},
    {DtypeRule::kMxScale, "mx_scale"},
    {DtypeRule::kBf16Fp16, "bf16|fp16"},
    {DtypeRule::kMxFp8, "mx_fp8"},
    {DtypeRule::kRowIndex, "int32|uint32"},
    {DtypeRule::kIndex8, "uint16|uint32"},
    {DtypeRule::kSeed, "int32|uint32 seed"},
    {DtypeRule::kUint32, "uint32"},
    {DtypeRule::kUint16, "uint16"},
    {DtypeRule::kFp32Int32, "fp32|int32"},
    {DtypeRule::kInt32, "int32"},
    {DtypeRule::kInteger, "an integer type"},
}}};

struct OperandRole {
  std::string_view name;
  SpaceSet spaces;
  Access access = Access::kRead;
  DtypeRule dtype = DtypeRule::kAny;
};

// A [P, 1] per-partition operand past an op's declared roles, named by a ScalarArg key
// (arg0=@2, bias=@3): read, on chip, one element per partition.
inline constexpr OperandRole kColumnRole{"column", SpaceSet{Space::kSbuf, Space::kPsum},
                                         Access::kRead, DtypeRule::kAny};

// Generation features an op or a parameter needs, named by the spec key that enables them.
enum class Feature : uint8_t {
  kNone,
  kQuantizeMx,         // core.features.quantize_mx
  kFastExponential,    // core.features.fast_exponential
  kMxMatmul,           // core.features.mx_matmul
  kDmaTranspose,       // core.dma.transpose
  kDoubleRowFp8,       // core.features.double_row_fp8 (perf_mode=double_row)
  kBf16Psum,           // core.features.bf16_psum (a bf16 matmul result)
  kBitExactTranspose,  // core.features.bit_exact_transpose (transpose_pe transpose=true)
  kCoreToCore,         // core.features.core_to_core (core_barrier, sendrecv)
  kRangeSelect,        // core.features.range_select (NC-v3 VectorE range_select)
  kActivate2,          // core.features.activate2 (NC-v4 ScalarE activate2)
  kNonzeroWithCount,   // core.features.nonzero_with_count (NC-v3 GpSimd)
  kRand2,              // core.features.rand2 (NC-v4 VectorE rand2)
};
inline constexpr NameTable<Feature, 13> kFeatureNames{{{
    {Feature::kNone, "none"},
    {Feature::kQuantizeMx, "features.quantize_mx"},
    {Feature::kFastExponential, "features.fast_exponential"},
    {Feature::kMxMatmul, "features.mx_matmul"},
    {Feature::kDmaTranspose, "dma.transpose"},
    {Feature::kDoubleRowFp8, "features.double_row_fp8"},
    {Feature::kBf16Psum, "features.bf16_psum"},
    {Feature::kBitExactTranspose, "features.bit_exact_transpose"},
    {Feature::kCoreToCore, "features.core_to_core"},
    {Feature::kRangeSelect, "features.range_select"},
    {Feature::kActivate2, "features.activate2"},
    {Feature::kNonzeroWithCount, "features.nonzero_with_count"},
    {Feature::kRand2, "features.rand2"},
}}};
bool has_feature(const arch::CoreSpec& core, Feature f);

// How an op's operand shapes relate; validation implements each rule once (validate_shapes.cc,
// validate_matmul.cc), the table says which one an op obeys.
enum class ShapeRule : uint8_t {
  kNone,              // no relation (memset, iota, control)
  kElementwise,       // every operand [P, F] like dst (columns [P, 1])
  kReduceAccum,       // dst like src, reduce_dst [P, 1]
  kReduceFree,        // dst = src with the innermost reduce_axes free dims reduced
  kPartitionReduce,   // dst [1, F] from src [P, F]
  kBnStats,           // dst [P, 6] from src [P, <= 512]
  kBnAggr,            // dst [P, 2] from src [P, 6k]
  kMax8,              // dst [P, 8] from src [P, 8 .. 16384]
  kFindIndex8,        // dst [P, 8] from data [P, 8 .. 16384] and vals [P, 8]
  kMatchReplace8,     // dst like data [P, <= 16384], dst_idx and vals [P, 8]
  kRandSeed,          // src [1 or the lanes', k >= 1] seeds
  kRandState,         // dst [lanes, 6 or 24 words] uint32 from partition 0
  kTransposeDve,      // dst [F, P] from src [P, F], P, F <= 32
  kStreamShuffle,     // dst and src of one dtype and free size, quadrant-aligned partitions
  kCumulative,        // dst like src; op1 add, subtract, mult, max or min; no 32-bit integers
  kActivate2,         // elementwise (reduce_dst [P, 1]); op0 / op1 one of the ALU stage's pairs
  kNGather,           // dst like indices [P, n], data [P, F] of dst's dtype
  kLocalGather,       // dst [P, indices x elems] from src [P, F]; P a multiple of 16
  kSequenceBounds,    // dst [1, 2 n] from segment ids [1, n]
  kNonzeroWithCount,  // dst [P, F + 1] from src [P, F]
  kTransposePe,       // dst [F, P] from src [P, F], P, F <= the PE array
  kLoadStationary,    // stationary [K, M] within the matmul limits
  kMultiplyMoving,    // dst [M, N] from moving [K, N] and the last stationary
  kMatmulMx,          // MX: [K/4, M x4] and [K/4, N x4] with scales, dst [M, N]
  kQuantizeMx,        // dst like src, scales [P, F/4]
  kDmaCopy,           // equal element counts, any partition split
  kDmaTranspose,      // dst [F, P] from src [P, F]
  kDmaIndirect,       // SBUF [P, F], offsets [P, 1], HBM [rows, F] over a tensor's rows
  kSendRecv,          // dst and src of one shape and dtype (what the peer sends is alike)
  kCollective,        // dst and src of one dtype; element counts as the kind needs
  kCollectiveV,       // dst and src (operand 2) of one dtype, uint32 metadata of 3 or 4 rows
  kOneElement,        // one operand of a single element (one partition or row, one element)
};

struct OpInfo {
  Opcode op = Opcode::kNop;
  EngineSet engines;
  std::array<OperandRole, kMaxOperands> roles{};
  int8_t num_roles = 0;
  ParamKeySet params;
  Feature feature = Feature::kNone;
  ShapeRule shape = ShapeRule::kNone;
  std::string_view doc;

  constexpr int num_writes() const {
    int n = 0;
    for (int i = 0; i < num_roles; ++i) n += roles[i].access == Access::kWrite;
    return n;
  }
  // Whether [P, 1] column operands may follow the roles (a ScalarArg key is a param).
  constexpr bool takes_columns() const {
    for (ParamKey k : kScalarArgKeys)
      if (params.has(k)) return true;
    return false;
  }
};

std::span<const OpInfo> op_table();  // indexed by Opcode
// Ops the DMA engines carry out (the trigger only hands them over): dma_copy, dma_transpose,
// dma_gather, dma_scatter, sendrecv, collective. One list for the builder, the costs and the
// timing.
bool is_dma(Opcode op);
// DMAs that other cores complete: sendrecv (with a peer core of the logical core) and
// collective (with the ranks of a replica group). Their signals apply when the peers say.
constexpr bool is_collective(Opcode op) {
  return op == Opcode::kCollective || op == Opcode::kCollectiveV;
}
constexpr bool is_peer_transfer(Opcode op) { return op == Opcode::kSendRecv || is_collective(op); }
const OpInfo& op_info(Opcode op);
std::string_view mnemonic(Opcode op);  // from opcode.h
std::optional<Opcode> find_opcode(std::string_view mnemonic);

// The role of operand `index` of an op: a declared role, or kColumnRole past them.
const OperandRole& operand_role(Opcode op, int index);

// Whether the instruction's operands match its op's roles: num_operands = roles + columns,
// every ScalarArg @N names a column operand (index >= roles) and every column is named.
// Returns the problem, or an empty string. Shared by the assembler and validation.
std::string check_operand_structure(const Instruction& inst);

// The `trnsim isa` listing: every op with engines, operands, params, feature and doc, then
// the names of every enumeration.
std::string describe_isa();

}  // namespace trnsim::isa
