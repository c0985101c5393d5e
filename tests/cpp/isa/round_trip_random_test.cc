// Random programs round-trip exactly through the text form: every opcode, random operand
// fields over their whole integer ranges, random float bits (NaNs included), random waits,
// signals, names and branch targets. Only the op table's structure is respected (operand
// count, column references, the op's parameter keys), not the hardware rules, because the
// text form must be exact for invalid programs too.
#include <gtest/gtest.h>

#include <bit>
#include <limits>
#include <random>

#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/op_table.h"

namespace trnsim::isa {
namespace {

ScalarArg& arg_of(ParamKey k, Params& p) {
  switch (k) {
    case ParamKey::kArg0:
      return p.arg0;
    case ParamKey::kArg1:
      return p.arg1;
    case ParamKey::kScale:
      return p.scale;
    default:
      return p.bias;
  }
}

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  template <typename T>
  T any() {  // uniform over T's range
    return static_cast<T>(rng_());
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  bool coin() { return rng_() & 1; }
  // Small values most of the time, so that tensors and labels are hit; any value otherwise.
  int64_t i64() { return coin() ? below(300) - 20 : any<int64_t>(); }

  num::Format format() {
    const auto all = num::builtin_formats();
    return all[static_cast<size_t>(below(static_cast<int64_t>(all.size())))];
  }

  AccessPattern operand(SpaceSet spaces, const Program& p) {
    AccessPattern ap;
    do ap.space = static_cast<Space>(below(3));
    while (!spaces.has(ap.space));
    ap.dtype = format();
    ap.start_partition = coin() ? static_cast<int32_t>(below(128)) : any<int32_t>();
    ap.num_partitions = coin() ? static_cast<int32_t>(below(129)) : any<int32_t>();
    ap.partition_stride = coin() ? 0 : i64();
    ap.offset = i64();
    if (ap.space == Space::kHbm && !p.tensors.empty() && coin()) {
      const HbmTensor& t =
          p.tensors[static_cast<size_t>(below(static_cast<int64_t>(p.tensors.size())))];
      ap.offset = t.address + below(t.bytes());
      if (coin()) ap.partition_stride = t.row_elements();
    }
    ap.ndim = static_cast<int32_t>(below(kMaxFreeDims + 1));
    for (int i = 0; i < ap.ndim; ++i) ap.dims[static_cast<size_t>(i)] = {i64(), i64()};
    return ap;
  }

  Params params(const OpInfo& info, Instruction& in, const Program& p) {
    Params r;
    r.op0 = static_cast<AluOp>(below(kAluOpNames.size()));
    r.op1 = static_cast<AluOp>(below(kAluOpNames.size()));
    r.reduce_op = static_cast<AluOp>(below(kAluOpNames.size()));
    r.func = static_cast<ActFunc>(below(kActFuncNames.size()));
    r.acc = static_cast<AccumulateFlag>(below(kAccumulateNames.size()));
    r.perf_mode = static_cast<MatmulPerfMode>(below(kPerfModeNames.size()));
    r.rounding = static_cast<num::Rounding>(below(3));
    for (ScalarArg* a : {&r.arg0, &r.arg1, &r.scale, &r.bias})
      a->imm = std::bit_cast<float>(any<uint32_t>());
    r.alpha = std::bit_cast<float>(any<uint32_t>());
    r.value = std::bit_cast<double>(any<uint64_t>());
    r.reverse0 = coin(), r.reverse1 = coin(), r.transpose = coin(), r.dma_accumulate = coin();
    r.reduce_axes = any<int8_t>();
    r.tile_row = any<int16_t>(), r.tile_col = any<int16_t>();
    r.tile_rows = any<int16_t>(), r.tile_cols = any<int16_t>();
    r.iota_base = i64(), r.channel_multiplier = i64(), r.reg_imm = i64();
    r.dma_queue = any<int16_t>(), r.reg_dst = any<int16_t>(), r.reg_a = any<int16_t>();
    r.reg_b = any<int16_t>();
    r.branch_target = coin() ? static_cast<int32_t>(below(8)) : any<int32_t>();
    r = canonical_params(r, info.params);
    // Column operands for some of the op's ScalarArg keys.
    for (ParamKey k : kScalarArgKeys) {
      if (!info.params.has(k) || in.num_operands == kMaxOperands || !coin()) continue;
      arg_of(k, r) = ScalarArg{scalar_arg(k, Params{}).imm, in.num_operands};
      in.operands[static_cast<size_t>(in.num_operands++)] = operand(kColumnRole.spaces, p);
    }
    return r;
  }

  std::string text() {
    std::string s;
    const std::string alphabet = "ab _#\"\\\n\t=<-[]@:,.x9";
    for (int64_t n = below(12); n > 0; --n)
      s += alphabet[static_cast<size_t>(below(static_cast<int64_t>(alphabet.size())))];
    return s;
  }

 private:
  std::mt19937_64 rng_;
};

TEST(RoundTripRandom, ThousandsOfInstructions) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    Gen g(seed);
    Program p;
    p.chip = g.coin() ? "trn2" : g.text();
    p.seed = g.any<uint64_t>();
    p.num_semaphores = g.any<int32_t>();
    for (int t = 0; t < 3; ++t)
      p.add_tensor("T" + std::to_string(t), g.format(), {1 + g.below(64), 1 + g.below(64)},
                   static_cast<TensorKind>(g.below(4)), g.coin() ? -1 : g.below(1 << 20));
    for (int i = 0; i < 150; ++i) {
      const OpInfo& info = op_table()[static_cast<size_t>(g.below(kNumOpcodes))];
      Instruction in;
      in.op = info.op;
      do in.engine = static_cast<Engine>(g.below(kNumEngines));
      while (!info.engines.has(in.engine));
      for (int r = 0; r < info.num_roles; ++r)
        in.operands[static_cast<size_t>(r)] =
            g.operand(info.roles[static_cast<size_t>(r)].spaces, p);
      in.num_operands = info.num_roles;
      in.p = g.params(info, in, p);
      if (g.coin()) in.name = g.text();
      for (int64_t w = g.below(3); w > 0; --w) in.waits.push_back({g.any<uint16_t>(), g.i64()});
      for (int64_t s = g.below(3); s > 0; --s) in.signals.push_back({g.any<uint16_t>(), g.i64()});
      ASSERT_EQ(check_operand_structure(in), "");
      p.append(std::move(in));
    }
    const std::string text = disassemble(p);
    Program back;
    ASSERT_NO_THROW(back = assemble(text, "random")) << "seed " << seed << "\n" << text;
    EXPECT_TRUE(back == p) << "seed " << seed << "\n" << text;
    EXPECT_EQ(disassemble(back), text) << "seed " << seed;
  }
}

}  // namespace
}  // namespace trnsim::isa
