// One instruction of a NeuronCore program, as data. What each operand slot and parameter
// means for a given opcode is declared once in the op table (isa/op_table.h); semantics
// (values) and cost (time) are separate functions of the same instruction (ARCHITECTURE.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/inline_vector.h"
#include "base/same_bytes.h"
#include "isa/access_pattern.h"
#include "isa/engine.h"
#include "isa/opcode.h"
#include "numerics/policy.h"

namespace trnsim::isa {

// ALU operations of the Vector/Scalar/GpSimd engines (HARDWARE.md s8, SHARED). Arithmetic is
// FP32; bitwise ops and shifts treat the operand as an integer bit pattern.
enum class AluOp : uint8_t {
  kBypass,
  kAdd,
  kSubtract,
  kMult,
  kDivide,
  kMax,
  kMin,
  kAbsMax,
  kAbsMin,
  kPow,
  kMod,
  kAverage,
  kIsEqual,
  kNotEqual,
  kIsGe,
  kIsGt,
  kIsLe,
  kIsLt,
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor,
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kBitwiseNot,
  kShiftLeft,
  kShiftRightLogical,
  kRsqrt,
  kAbs,
};

// ScalarE activation functions (HARDWARE.md s2.4, SHARED). Computed correctly rounded in FP32
// (the hardware's polynomial tables are not public: HARDWARE.md s11 item 3).
enum class ActFunc : uint8_t {
  kCopy,
  kSquare,
  kSigmoid,
  kRelu,
  kPrelu,
  kGelu,
  kGeluDx,
  kGeluApprxTanh,
  kGeluApprxSigmoid,
  kGeluApprxSigmoidDx,
  kSilu,
  kSiluDx,
  kTanh,
  kSoftplus,
  kMish,
  kErf,
  kErfDx,
  kExp,
  kLog,
  kSin,
  kArctan,
  kSqrt,
  kRsqrt,
  kReciprocal,
  kSign,
  kAbs,
};

// TensorE matmul accumulation group position (KLR MatmulGroupElement): the first write of a
// group overwrites PSUM, later ones accumulate.
enum class AccumulateFlag : uint8_t { kWhole, kFirst, kMiddle, kLast };

enum class MatmulPerfMode : uint8_t { kNone, kDoubleRowFp8 };

// What a `collective` instruction does with the other ranks of its replica group (NKI
// nki.collectives): the rank list is the group's list that holds this rank.
enum class CollectiveKind : uint8_t {
  kAllReduce,      // dst = reduce_op over the ranks' src (every rank the same)
  kAllGather,      // dst = the ranks' src concatenated along dim, in rank-list order
  kReduceScatter,  // dst = this rank's chunk (along dim) of the reduction of the ranks' src
  kAllToAll,       // chunk j of dst (along dim) = chunk (this rank's place) of rank j's src
  kPermute,        // dst = src of rank recv_from; src goes to rank send_to (-1: none)
  // collective_v, sizes read from its metadata operand when it runs (NKI all_to_all_v,
  // all_gather_v): uint32 rows of one column per rank of the list: send counts, send
  // displacements, receive counts (written unless kRecvCountsKnown), receive displacements
  // (with kHasRdispls); counts and displacements in elements of the flat tensors.
  kAllToAllV,   // the chunk for rank j: src[send_displs[j], + send_counts[j])
  kAllGatherV,  // one chunk for every rank: src[send_displs[0], + send_counts[0])
};
// collective_v flags (Params::collective_flags).
inline constexpr uint8_t kRecvCountsKnown = 1;  // row 2 given, not written
inline constexpr uint8_t kHasRdispls = 2;       // row 3 places each chunk, else slot i of n

// ScalarArg and Params have no implicit padding: the `reserved` members fill every gap and
// stay zero, so that two of them are equal exactly when their bytes are (floats by bits), and
// the timing model's pricing memo compares them as bytes (base/same_bytes.h) per instruction.
// tests/cpp/isa/layout_test.cc checks that the members fill the struct.

// A per-partition scalar operand: an immediate, or a [P, 1] column read from an operand slot.
struct ScalarArg {
  float imm = 0.0f;
  int8_t operand = -1;  // >= 0: index into Instruction::operands
  std::array<uint8_t, 3> reserved{};
};

// Scalar registers per engine sequencer: 64 of 32 bits on NeuronCore-v2..v4 (NKI API reference,
// nki.isa.register_alloc).
inline constexpr int kScalarRegisters = 64;

struct Params {
  // Vector / GpSimd / Scalar ALU ops: out = (in op0 arg0) op1 arg1, reductions with reduce_op.
  AluOp op0 = AluOp::kBypass, op1 = AluOp::kBypass, reduce_op = AluOp::kAdd;
  uint8_t reserved0 = 0;
  ScalarArg arg0, arg1;
  bool reverse0 = false, reverse1 = false;  // swap operand order of op0 / op1
  int8_t reduce_axes = 0;                   // innermost free dims reduced (tensor_reduce)
  // ScalarE activation: out = func(in * scale + bias); bias/scale may be [P,1] operands.
  ActFunc func = ActFunc::kCopy;
  ScalarArg scale{1.0f, -1}, bias{0.0f, -1};
  float alpha = 0.0f;  // prelu slope and similar function parameters
  // TensorE
  AccumulateFlag acc = AccumulateFlag::kWhole;
  MatmulPerfMode perf_mode = MatmulPerfMode::kNone;
  int16_t tile_row = 0, tile_col = 0;        // PE tile position (multiples of 32)
  int16_t tile_rows = 128, tile_cols = 128;  // PE tile size
  bool transpose = false;                    // is_transpose (bit-exact from NC-v3)
  uint8_t reserved1 = 0;
  // Constants: memset value, iota base / multipliers, affine_select predicate.
  double value = 0.0;
  int64_t iota_base = 0, channel_multiplier = 0;
  // Output cast
  num::Rounding rounding = num::Rounding::kNearestEven;
  uint8_t reserved2 = 0;
  // DMA: which of the core's DMA queues runs the transfer (0..engines*queues-1).
  int16_t dma_queue = 0;
  bool dma_accumulate = false;  // NC-v4 SBUF read-add-write
  bool dma_skip_oob = false;    // dma_gather / dma_scatter: a row outside the table moves nothing
  // sendrecv: the cores (ranks in the logical core) src goes to and dst comes from, and the
  // pipe that pairs it with the peer's sendrecv (the k-th on a pipe meets the peer's k-th).
  int16_t send_to = 0, recv_from = 0, pipe = 0;
  // Control: scalar register operands and branch target.
  int16_t reg_dst = -1, reg_a = -1, reg_b = -1;
  std::array<uint8_t, 6> reserved4{};
  int64_t reg_imm = 0;
  int32_t branch_target = -1;  // instruction index in the same stream
  // local_gather: elements read at each index (1, 2, 4, ..., 32) and indices used per
  // 16-partition GpSimd core (0: all of the core's index slice).
  int16_t gather_elems = 1, gather_indices = 0;
  // stream_shuffle: output partition i of each 32-partition quadrant copies the quadrant's
  // input partition shuffle[i]; kShuffleKeep leaves it unchanged.
  std::array<uint8_t, 32> shuffle{};
  // collective: what it does; its replica group (an index into the groups of the rank run:
  // fabric/rank_run.h); and `outer`, the blocks a rank's chunk is cut into: the product of
  // the tensor dims before the collective dim (1: dim 0), since a chunk of dim d is `outer`
  // runs of contiguous elements in row-major order. Reductions use reduce_op; permutes
  // send_to / recv_from as global ranks (-1: none).
  CollectiveKind collective = CollectiveKind::kAllReduce;
  uint8_t collective_flags = 0;  // collective_v: kRecvCountsKnown | kHasRdispls
  int16_t replica_group = 0;
  int32_t collective_outer = 1;
};
inline constexpr uint8_t kShuffleKeep = 255;
inline constexpr int64_t kShuffleQuadrant = 32;  // partitions a stream_shuffle mask covers
// The source partition (counted from src's start) that dst partition j (from dst's start)
// copies under `mask`: partition mask[j % 32] of j's quadrant; -1 where it keeps its value.
// A mask entry >= 32 (other than kShuffleKeep) gives a partition outside the quadrant, which
// validation reports.
constexpr int64_t shuffle_source(const std::array<uint8_t, 32>& mask, int64_t j) {
  const uint8_t m = mask[static_cast<size_t>(j % kShuffleQuadrant)];
  return m == kShuffleKeep ? -1 : j / kShuffleQuadrant * kShuffleQuadrant + m;
}

// The running ops of tensor_scalar_cumulative (NKI API reference).
constexpr bool is_cumulative_op(AluOp op) {
  return op == AluOp::kAdd || op == AluOp::kSubtract || op == AluOp::kMult || op == AluOp::kMax ||
         op == AluOp::kMin;
}

// Equal exactly when their bytes are (no implicit padding: see above), floats by bits. The
// size checks fail when a field is added, so that the layout test is updated with it.
inline bool operator==(const ScalarArg& a, const ScalarArg& b) {
  static_assert(sizeof(ScalarArg) == 8, "ScalarArg changed: update tests/cpp/isa/layout_test.cc");
  return same_bytes<sizeof(ScalarArg)>(&a, &b);
}
inline bool operator==(const Params& a, const Params& b) {
  static_assert(sizeof(Params) == 160, "Params changed: update tests/cpp/isa/layout_test.cc");
  return same_bytes<sizeof(Params)>(&a, &b);
}

// Semaphores are counters shared by all engines and DMA queues of a core (DRV: 256 per core).
struct SemWait {
  uint16_t sem = 0;
  int64_t value = 0;  // proceed when the counter >= value
  bool operator==(const SemWait&) const = default;
};
struct SemSignal {
  uint16_t sem = 0;
  int64_t delta = 1;  // added when the instruction (or its DMA transfer) completes
  bool operator==(const SemSignal&) const = default;
};

inline constexpr int kMaxOperands = 6;

// Where an instruction came from, for traces, profiles and diagnostics: indices into
// Program::symbols, -1 where unknown. Not part of the instruction's meaning (operator== and the
// text form ignore it), so a program built twice from different files compares equal.
struct Origin {
  int32_t file = -1;  // the file of source_line: an NKI kernel's .py, a text program
  std::array<int32_t, kMaxOperands> operands{-1, -1, -1, -1, -1, -1};  // each one's tile / tensor
};

// Field order: what every pass reads first (op, counts, waits, signals, params), the operands
// last, so that a pass over a large program touches only the lines of the operands it uses.
struct Instruction {
  Opcode op = Opcode::kNop;
  Engine engine = Engine::kSync;
  int8_t num_operands = 0;
  int32_t source_line = 0;  // line in origin.file or the text program (0: not known)
  // Nearly always one or two each: kept inline (base/inline_vector.h).
  InlineVector<SemWait, 2> waits;      // all must hold before the instruction issues
  InlineVector<SemSignal, 2> signals;  // applied when it completes
  Params p;
  std::string name;  // optional label for traces and diagnostics
  Origin origin;
  std::array<AccessPattern, kMaxOperands> operands{};  // roles per op table (dst first)
};

// Whether an operand of `in` is register-relative (AccessPattern::dynamic).
inline bool has_dynamic_operand(const Instruction& in) {
  for (int i = 0; i < in.num_operands; ++i)
    if (in.operands[static_cast<size_t>(i)].dynamic()) return true;
  return false;
}

}  // namespace trnsim::isa
