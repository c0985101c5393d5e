// The keys of an instruction's Params as the text form writes them (`op0=add queue=3`), each
// bound once to its Params field with a printer and a parser (param_keys.cc). The op table
// says which keys an op takes; the assembler accepts exactly those, the disassembler prints
// those that differ from the default, and validation reports a field set outside them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "isa/instruction.h"

namespace trnsim::isa {

// In the order the disassembler prints them: control keys read as `rd=r1 ra=r1 op0=add imm=1`,
// ALU keys as `op0=mult arg0=2 op1=add arg1=1`.
#define TRNSIM_PARAM_KEYS(X)                                                                 \
  X(kTarget, "target", "branch target: a label of the same engine stream")                   \
  X(kRd, "rd", "destination scalar register (rN)")                                           \
  X(kRa, "ra", "first source scalar register (rN)")                                          \
  X(kOp0, "op0", "first ALU op: (in op0 arg0); comparison for branch and affine_select")     \
  X(kRb, "rb", "second source scalar register (rN); unset: imm is used")                     \
  X(kImm, "imm", "integer immediate of scalar-register ops")                                 \
  X(kArg0, "arg0", "operand of op0: an fp32 immediate or @N, a [P,1] column operand")        \
  X(kReverse0, "reverse0", "swap the operands of op0")                                       \
  X(kOp1, "op1", "second ALU op: (...) op1 arg1")                                            \
  X(kArg1, "arg1", "operand of op1: an fp32 immediate or @N, a [P,1] column operand")        \
  X(kReverse1, "reverse1", "swap the operands of op1")                                       \
  X(kReduceOp, "reduce_op", "reduction ALU op")                                              \
  X(kReduceAxes, "reduce_axes", "number of innermost free dims reduced")                     \
  X(kFunc, "func", "activation function")                                                    \
  X(kScale, "scale", "activation input scale: fp32 immediate or @N column operand")          \
  X(kBias, "bias", "activation input bias: fp32 immediate or @N column operand")             \
  X(kAlpha, "alpha", "activation function parameter (prelu slope)")                          \
  X(kAcc, "acc", "PSUM accumulation group position: whole, first, middle, last")             \
  X(kPerfMode, "perf_mode", "matmul performance mode: none, double_row (FP8, K = 256)")      \
  X(kTileRow, "tile_row", "first PE row of the tile (multiple of 32)")                       \
  X(kTileCol, "tile_col", "first PE column of the tile (multiple of 32)")                    \
  X(kTileRows, "tile_rows", "PE rows of the tile (the generation's row_tile_sizes)")         \
  X(kTileCols, "tile_cols", "PE columns of the tile (the generation's col_tile_sizes)")      \
  X(kTranspose, "transpose", "bit-exact transpose mode (is_transpose)")                      \
  X(kIotaBase, "iota_base", "affine pattern constant term")                                  \
  X(kChannelMultiplier, "channel_multiplier", "affine pattern coefficient of the partition") \
  X(kValue, "value", "constant: memset fill, affine_select replacement")                     \
  X(kQueue, "queue", "DMA queue of the core (0 .. engines x queues_per_engine - 1)")         \
  X(kAccumulate, "accumulate", "DMA adds into dst; range_select keeps the VectorE max")      \
  X(kSkipOob, "skip_oob", "dma_gather / dma_scatter: a row outside the table is skipped")    \
  X(kSendTo, "send_to", "sendrecv: the core (rank in the logical core) that receives src")   \
  X(kRecvFrom, "recv_from", "sendrecv: the core whose src arrives in dst")                   \
  X(kPipe, "pipe", "sendrecv: pairs the k-th sendrecv on a pipe with the peer's k-th")       \
  X(kCollectiveKind, "kind",                                                                 \
    "collective: all_reduce, all_gather, reduce_scatter, all_to_all, "                       \
    "permute")                                                                               \
  X(kCollectiveOuter, "outer", "collective: blocks of a chunk (dims before the split dim)")  \
  X(kReplicaGroup, "group", "collective: replica group (index into the run's groups)")       \
  X(kCollectiveFlags, "flags", "collective_v: 1 recv counts known, 2 recv displacements")    \
  X(kRounding, "rounding", "rounding of the output cast: rne, stochastic, rz")               \
  X(kShuffle, "shuffle",                                                                     \
    "stream_shuffle: 32 source partitions, colon-separated, for the outputs of a quadrant "  \
    "(255: unchanged)")                                                                      \
  X(kGatherElems, "elems", "local_gather: contiguous elements read at each index")           \
  X(kGatherIndices, "indices", "local_gather: indices used per GpSimd core (0: all)")

enum class ParamKey : uint8_t {
#define TRNSIM_PARAM_KEY_ENUM(id, name, doc) id,
  TRNSIM_PARAM_KEYS(TRNSIM_PARAM_KEY_ENUM)
#undef TRNSIM_PARAM_KEY_ENUM
};

inline constexpr int kNumParamKeys = 0
#define TRNSIM_PARAM_KEY_COUNT(id, name, doc) +1
    TRNSIM_PARAM_KEYS(TRNSIM_PARAM_KEY_COUNT)
#undef TRNSIM_PARAM_KEY_COUNT
    ;

struct ParamKeySet {
  uint64_t bits = 0;
  constexpr ParamKeySet() = default;
  constexpr ParamKeySet(std::initializer_list<ParamKey> keys) {
    for (ParamKey k : keys) bits |= uint64_t{1} << static_cast<unsigned>(k);
  }
  constexpr bool has(ParamKey k) const { return (bits >> static_cast<unsigned>(k)) & 1u; }
  constexpr ParamKeySet operator|(ParamKeySet o) const {
    ParamKeySet s;
    s.bits = bits | o.bits;
    return s;
  }
};
static_assert(kNumParamKeys <= 64);

std::string_view param_key_name(ParamKey k);
std::string_view param_key_doc(ParamKey k);
std::optional<ParamKey> find_param_key(std::string_view name);

// The text of one field ("add", "1.5", "@2", "r3", "true"); `target` prints the instruction
// index (the disassembler writes a label instead).
std::string format_param(ParamKey k, const Params& p);
// Sets one field from its text; throws InputError("", text, why) when the text is malformed.
void parse_param(ParamKey k, std::string_view text, Params& p);
// Whether the field differs from a default-constructed Params (bitwise for floats).
bool param_is_default(ParamKey k, const Params& p);

// The ScalarArg fields, which may name a column operand (@N).
inline constexpr ParamKey kScalarArgKeys[] = {ParamKey::kArg0, ParamKey::kArg1, ParamKey::kScale,
                                              ParamKey::kBias};
const ScalarArg& scalar_arg(ParamKey k, const Params& p);  // k must be in kScalarArgKeys

// Params with only the keys in `keys` copied from p (through their text form), the rest at
// their defaults: what the text form of an instruction preserves.
Params canonical_params(const Params& p, ParamKeySet keys);

}  // namespace trnsim::isa
