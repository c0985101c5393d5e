// Each Params field bound once to its key: a printer and a parser built from the field's
// member pointer and value kind, so adding a key is one line here and one in param_keys.h.
#include "isa/param_keys.h"

#include <fmt/format.h>

#include <array>
#include <bit>

#include "isa/names.h"
#include "isa/text_numbers.h"
#include "numerics/policy_names.h"

namespace trnsim::isa {

namespace {

[[noreturn]] void bad(std::string_view text, std::string why) {
  throw InputError("", std::string(text), std::move(why));
}

struct KeyOps {
  std::string (*format)(const Params&);
  void (*parse)(std::string_view, Params&);
};

template <auto M>
KeyOps integer_key() {
  return {[](const Params& p) { return fmt::format("{}", p.*M); },
          [](std::string_view t, Params& p) {
            using T = std::remove_cvref_t<decltype(p.*M)>;
            p.*M = parse_integer<T>(t);
          }};
}

template <auto M>
KeyOps bool_key() {
  return {[](const Params& p) { return std::string(p.*M ? "true" : "false"); },
          [](std::string_view t, Params& p) { p.*M = parse_bool(t); }};
}

template <auto M>
KeyOps float_key() {
  return {[](const Params& p) { return format_float(p.*M); },
          [](std::string_view t, Params& p) { p.*M = parse_float(t); }};
}

template <auto M>
KeyOps double_key() {
  return {[](const Params& p) { return format_double(p.*M); },
          [](std::string_view t, Params& p) { p.*M = parse_double(t); }};
}

// An enum field named by one of the tables in names.h.
template <auto M, const auto& Table>
KeyOps enum_key() {
  return {[](const Params& p) { return std::string(Table.name(p.*M)); },
          [](std::string_view t, Params& p) {
            auto v = Table.find(t);
            if (!v) bad(t, "expected one of: " + Table.list());
            p.*M = *v;
          }};
}

// A scalar register: "r3" (and "r-1" for the unset value, which is the default).
template <auto M>
KeyOps register_key() {
  return {[](const Params& p) { return fmt::format("r{}", p.*M); },
          [](std::string_view t, Params& p) {
            if (!t.starts_with('r')) bad(t, "expected a scalar register rN");
            p.*M = parse_integer<int16_t>(t.substr(1));
          }};
}

// An fp32 immediate, or "@N" naming operand N (a [P,1] column). Naming an operand keeps the
// immediate at its default, so the text of a ScalarArg is the whole of its meaning.
template <auto M>
KeyOps scalar_arg_key() {
  return {[](const Params& p) {
            const ScalarArg& a = p.*M;
            return a.operand >= 0 ? fmt::format("@{}", a.operand) : format_float(a.imm);
          },
          [](std::string_view t, Params& p) {
            ScalarArg& a = p.*M;
            if (t.starts_with('@')) {
              a = Params{}.*M;
              a.operand = parse_integer<int8_t>(t.substr(1));
              if (a.operand < 0) bad(t, "operand index must be >= 0");
            } else {
              a.operand = -1;
              a.imm = parse_float(t);
            }
          }};
}

KeyOps rounding_key() {
  return {[](const Params& p) { return std::string(num::name_of(p.rounding)); },
          [](std::string_view t, Params& p) { p.rounding = num::parse_rounding(t, "rounding"); }};
}

// stream_shuffle's 32 source partitions as "0:1:...:31" (commas separate operands).
KeyOps shuffle_key() {
  return {[](const Params& p) {
            std::string s;
            for (size_t i = 0; i < p.shuffle.size(); ++i)
              s += fmt::format("{}{}", i ? ":" : "", p.shuffle[i]);
            return s;
          },
          [](std::string_view t, Params& p) {
            size_t i = 0;
            while (true) {
              const size_t comma = t.find(':');
              if (i == p.shuffle.size()) bad(t, "32 source partitions, not more");
              p.shuffle[i++] = parse_integer<uint8_t>(t.substr(0, comma));
              if (comma == std::string_view::npos) break;
              t.remove_prefix(comma + 1);
            }
            if (i != p.shuffle.size())
              bad(t, fmt::format("{} source partitions; a quadrant has 32", i));
          }};
}

// The binding of each key to its field. A switch, so a key without a binding is a compiler
// warning (-Wswitch) rather than a silent misalignment.
KeyOps key_ops(ParamKey k) {
  using enum ParamKey;
  switch (k) {
    case kTarget:
      return integer_key<&Params::branch_target>();
    case kRd:
      return register_key<&Params::reg_dst>();
    case kRa:
      return register_key<&Params::reg_a>();
    case kOp0:
      return enum_key<&Params::op0, kAluOpNames>();
    case kRb:
      return register_key<&Params::reg_b>();
    case kImm:
      return integer_key<&Params::reg_imm>();
    case kArg0:
      return scalar_arg_key<&Params::arg0>();
    case kReverse0:
      return bool_key<&Params::reverse0>();
    case kOp1:
      return enum_key<&Params::op1, kAluOpNames>();
    case kArg1:
      return scalar_arg_key<&Params::arg1>();
    case kReverse1:
      return bool_key<&Params::reverse1>();
    case kReduceOp:
      return enum_key<&Params::reduce_op, kAluOpNames>();
    case kReduceAxes:
      return integer_key<&Params::reduce_axes>();
    case kFunc:
      return enum_key<&Params::func, kActFuncNames>();
    case kScale:
      return scalar_arg_key<&Params::scale>();
    case kBias:
      return scalar_arg_key<&Params::bias>();
    case kAlpha:
      return float_key<&Params::alpha>();
    case kAcc:
      return enum_key<&Params::acc, kAccumulateNames>();
    case kPerfMode:
      return enum_key<&Params::perf_mode, kPerfModeNames>();
    case kTileRow:
      return integer_key<&Params::tile_row>();
    case kTileCol:
      return integer_key<&Params::tile_col>();
    case kTileRows:
      return integer_key<&Params::tile_rows>();
    case kTileCols:
      return integer_key<&Params::tile_cols>();
    case kTranspose:
      return bool_key<&Params::transpose>();
    case kIotaBase:
      return integer_key<&Params::iota_base>();
    case kChannelMultiplier:
      return integer_key<&Params::channel_multiplier>();
    case kValue:
      return double_key<&Params::value>();
    case kQueue:
      return integer_key<&Params::dma_queue>();
    case kSendTo:
      return integer_key<&Params::send_to>();
    case kRecvFrom:
      return integer_key<&Params::recv_from>();
    case kPipe:
      return integer_key<&Params::pipe>();
    case kCollectiveKind:
      return enum_key<&Params::collective, kCollectiveNames>();
    case kCollectiveOuter:
      return integer_key<&Params::collective_outer>();
    case kReplicaGroup:
      return integer_key<&Params::replica_group>();
    case kCollectiveFlags:
      return integer_key<&Params::collective_flags>();
    case kAccumulate:
      return bool_key<&Params::dma_accumulate>();
    case kSkipOob:
      return bool_key<&Params::dma_skip_oob>();
    case kRounding:
      return rounding_key();
    case kShuffle:
      return shuffle_key();
    case kGatherElems:
      return integer_key<&Params::gather_elems>();
    case kGatherIndices:
      return integer_key<&Params::gather_indices>();
  }
  TRNSIM_ASSERT(false && "unbound parameter key");
  return {};
}

struct KeyInfo {
  std::string_view name, doc;
  KeyOps ops;
};

const std::array<KeyInfo, kNumParamKeys>& key_table() {
  static const std::array<KeyInfo, kNumParamKeys> kTable = [] {
    std::array<KeyInfo, kNumParamKeys> t{};
#define TRNSIM_PARAM_KEY_INFO(id, name, doc) \
  t[static_cast<size_t>(ParamKey::id)] = KeyInfo{name, doc, key_ops(ParamKey::id)};
    TRNSIM_PARAM_KEYS(TRNSIM_PARAM_KEY_INFO)
#undef TRNSIM_PARAM_KEY_INFO
    return t;
  }();
  return kTable;
}

const KeyInfo& info(ParamKey k) { return key_table()[static_cast<size_t>(k)]; }

}  // namespace

std::string_view param_key_name(ParamKey k) { return info(k).name; }
std::string_view param_key_doc(ParamKey k) { return info(k).doc; }

std::optional<ParamKey> find_param_key(std::string_view name) {
  const auto& t = key_table();
  for (size_t i = 0; i < t.size(); ++i)
    if (t[i].name == name) return static_cast<ParamKey>(i);
  return std::nullopt;
}

std::string format_param(ParamKey k, const Params& p) { return info(k).ops.format(p); }
void parse_param(ParamKey k, std::string_view text, Params& p) { info(k).ops.parse(text, p); }

bool param_is_default(ParamKey k, const Params& p) {
  // The printers are exact (floats bitwise), so equal text is equal value.
  static const Params kDefault{};
  return format_param(k, p) == format_param(k, kDefault);
}

const ScalarArg& scalar_arg(ParamKey k, const Params& p) {
  switch (k) {
    case ParamKey::kArg0:
      return p.arg0;
    case ParamKey::kArg1:
      return p.arg1;
    case ParamKey::kScale:
      return p.scale;
    case ParamKey::kBias:
      return p.bias;
    default:
      TRNSIM_ASSERT(false && "not a ScalarArg key");
  }
  return p.arg0;  // not reached
}

Params canonical_params(const Params& p, ParamKeySet keys) {
  Params c;
  for (int i = 0; i < kNumParamKeys; ++i) {
    const auto k = static_cast<ParamKey>(i);
    if (keys.has(k)) parse_param(k, format_param(k, p), c);
  }
  return c;
}

}  // namespace trnsim::isa
