// Names of the ISA's enumerations, declared once: the assembler parses them, the disassembler,
// `trnsim isa`, traces and diagnostics print them. Each table lists its enum's values in
// declaration order (tests/cpp/isa/op_table_test.cc checks that, and that names are unique),
// so name(e) is an index and a new enumerator without a name fails the test.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "isa/access_pattern.h"
#include "isa/engine.h"
#include "isa/instruction.h"

namespace trnsim::isa {

template <typename E, size_t N>
struct NameTable {
  std::array<std::pair<E, std::string_view>, N> entries;

  static constexpr size_t size() { return N; }
  constexpr std::string_view name(E e) const {
    const auto i = static_cast<size_t>(e);
    return i < N ? entries[i].second : std::string_view("?");
  }
  constexpr std::optional<E> find(std::string_view s) const {
    for (const auto& [e, n] : entries)
      if (n == s) return e;
    return std::nullopt;
  }
  // "a, b, c": for error messages that list what is accepted.
  std::string list() const {
    std::string s;
    for (size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::string(entries[i].second);
    return s;
  }
};

// SHARED / KLR operator names, in snake case.
inline constexpr NameTable<AluOp, 29> kAluOpNames{{{
    {AluOp::kBypass, "bypass"},
    {AluOp::kAdd, "add"},
    {AluOp::kSubtract, "subtract"},
    {AluOp::kMult, "mult"},
    {AluOp::kDivide, "divide"},
    {AluOp::kMax, "max"},
    {AluOp::kMin, "min"},
    {AluOp::kAbsMax, "abs_max"},
    {AluOp::kAbsMin, "abs_min"},
    {AluOp::kPow, "pow"},
    {AluOp::kMod, "mod"},
    {AluOp::kAverage, "average"},
    {AluOp::kIsEqual, "is_equal"},
    {AluOp::kNotEqual, "not_equal"},
    {AluOp::kIsGe, "is_ge"},
    {AluOp::kIsGt, "is_gt"},
    {AluOp::kIsLe, "is_le"},
    {AluOp::kIsLt, "is_lt"},
    {AluOp::kLogicalAnd, "logical_and"},
    {AluOp::kLogicalOr, "logical_or"},
    {AluOp::kLogicalXor, "logical_xor"},
    {AluOp::kBitwiseAnd, "bitwise_and"},
    {AluOp::kBitwiseOr, "bitwise_or"},
    {AluOp::kBitwiseXor, "bitwise_xor"},
    {AluOp::kBitwiseNot, "bitwise_not"},
    {AluOp::kShiftLeft, "shift_left"},
    {AluOp::kShiftRightLogical, "shift_right_logical"},
    {AluOp::kRsqrt, "rsqrt"},
    {AluOp::kAbs, "abs"},
}}};

// SHARED activation function names.
inline constexpr NameTable<ActFunc, 26> kActFuncNames{{{
    {ActFunc::kCopy, "copy"},
    {ActFunc::kSquare, "square"},
    {ActFunc::kSigmoid, "sigmoid"},
    {ActFunc::kRelu, "relu"},
    {ActFunc::kPrelu, "prelu"},
    {ActFunc::kGelu, "gelu"},
    {ActFunc::kGeluDx, "gelu_dx"},
    {ActFunc::kGeluApprxTanh, "gelu_apprx_tanh"},
    {ActFunc::kGeluApprxSigmoid, "gelu_apprx_sigmoid"},
    {ActFunc::kGeluApprxSigmoidDx, "gelu_apprx_sigmoid_dx"},
    {ActFunc::kSilu, "silu"},
    {ActFunc::kSiluDx, "silu_dx"},
    {ActFunc::kTanh, "tanh"},
    {ActFunc::kSoftplus, "softplus"},
    {ActFunc::kMish, "mish"},
    {ActFunc::kErf, "erf"},
    {ActFunc::kErfDx, "erf_dx"},
    {ActFunc::kExp, "exp"},
    {ActFunc::kLog, "log"},
    {ActFunc::kSin, "sin"},
    {ActFunc::kArctan, "arctan"},
    {ActFunc::kSqrt, "sqrt"},
    {ActFunc::kRsqrt, "rsqrt"},
    {ActFunc::kReciprocal, "reciprocal"},
    {ActFunc::kSign, "sign"},
    {ActFunc::kAbs, "abs"},
}}};

// KLR MatmulGroupElement.
inline constexpr NameTable<AccumulateFlag, 4> kAccumulateNames{{{
    {AccumulateFlag::kWhole, "whole"},
    {AccumulateFlag::kFirst, "first"},
    {AccumulateFlag::kMiddle, "middle"},
    {AccumulateFlag::kLast, "last"},
}}};

// NKI nc_matmul perf_mode values.
inline constexpr NameTable<MatmulPerfMode, 2> kPerfModeNames{{{
    {MatmulPerfMode::kNone, "none"},
    {MatmulPerfMode::kDoubleRowFp8, "double_row"},
}}};

// collective kinds, as nki.collectives names them.
inline constexpr NameTable<CollectiveKind, 7> kCollectiveNames{{{
    {CollectiveKind::kAllReduce, "all_reduce"},
    {CollectiveKind::kAllGather, "all_gather"},
    {CollectiveKind::kReduceScatter, "reduce_scatter"},
    {CollectiveKind::kAllToAll, "all_to_all"},
    {CollectiveKind::kPermute, "permute"},
    {CollectiveKind::kAllToAllV, "all_to_all_v"},
    {CollectiveKind::kAllGatherV, "all_gather_v"},
}}};

// KLR engine names (engine.h's engine_name), the ones the text form prints.
inline constexpr NameTable<Engine, kNumEngines> kEngineNames{{{
    {Engine::kTensor, "pe"},
    {Engine::kVector, "dve"},
    {Engine::kScalar, "act"},
    {Engine::kGpSimd, "pool"},
    {Engine::kSync, "sp"},
}}};
// Long names the assembler also accepts after `.engine`.
inline constexpr NameTable<Engine, kNumEngines> kEngineLongNames{{{
    {Engine::kTensor, "tensor"},
    {Engine::kVector, "vector"},
    {Engine::kScalar, "scalar"},
    {Engine::kGpSimd, "gpsimd"},
    {Engine::kSync, "sync"},
}}};

inline constexpr NameTable<Space, 3> kSpaceNames{{{
    {Space::kSbuf, "sbuf"},
    {Space::kPsum, "psum"},
    {Space::kHbm, "hbm"},
}}};

// An enum's name by the table above: name_of(AluOp::kAdd) == "add".
constexpr std::string_view name_of(AluOp v) { return kAluOpNames.name(v); }
constexpr std::string_view name_of(ActFunc v) { return kActFuncNames.name(v); }
constexpr std::string_view name_of(AccumulateFlag v) { return kAccumulateNames.name(v); }
constexpr std::string_view name_of(MatmulPerfMode v) { return kPerfModeNames.name(v); }
constexpr std::string_view name_of(CollectiveKind v) { return kCollectiveNames.name(v); }
constexpr std::string_view name_of(Engine v) { return kEngineNames.name(v); }
constexpr std::string_view name_of(Space v) { return kSpaceNames.name(v); }

// An engine by its short or long name.
constexpr std::optional<Engine> find_engine(std::string_view s) {
  if (auto e = kEngineNames.find(s)) return e;
  return kEngineLongNames.find(s);
}

}  // namespace trnsim::isa
