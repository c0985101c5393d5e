// Self-checks of the op table and the name tables (STYLE.md practice 6).
#include "isa/op_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "arch/arch.h"
#include "isa/diagnostic.h"
#include "isa/program.h"

namespace trnsim::isa {
namespace {

TEST(OpTable, EveryOpcodeHasOneEntryInOrder) {
  ASSERT_EQ(op_table().size(), static_cast<size_t>(kNumOpcodes));
  for (int i = 0; i < kNumOpcodes; ++i)
    EXPECT_EQ(static_cast<int>(op_table()[static_cast<size_t>(i)].op), i);
}

TEST(OpTable, MnemonicsAreUniqueAndFindable) {
  std::set<std::string> seen;
  for (const OpInfo& info : op_table()) {
    const std::string m(mnemonic(info.op));
    EXPECT_FALSE(m.empty());
    EXPECT_TRUE(seen.insert(m).second) << "duplicate mnemonic " << m;
    EXPECT_EQ(find_opcode(m), info.op);
  }
  EXPECT_FALSE(find_opcode("no_such_op"));
}

TEST(OpTable, EntriesAreWellFormed) {
  for (const OpInfo& info : op_table()) {
    SCOPED_TRACE(std::string(mnemonic(info.op)));
    EXPECT_NE(info.engines.bits, 0);
    EXPECT_FALSE(info.doc.empty());
    EXPECT_LE(info.num_roles, kMaxOperands);
    std::set<std::string_view> names;
    bool reads_started = false;
    for (int i = 0; i < info.num_roles; ++i) {
      const OperandRole& r = info.roles[static_cast<size_t>(i)];
      EXPECT_TRUE(names.insert(r.name).second) << "duplicate role " << r.name;
      EXPECT_NE(r.spaces.bits, 0) << r.name;
      // The text form puts written operands before '<-': writes must come first.
      if (r.access == Access::kRead) reads_started = true;
      EXPECT_FALSE(reads_started && r.access == Access::kWrite) << r.name << " after a read";
      EXPECT_EQ(&operand_role(info.op, i), &info.roles[static_cast<size_t>(i)]);
    }
    EXPECT_EQ(&operand_role(info.op, info.num_roles), &kColumnRole);
    // Column operands need room after the roles.
    if (info.takes_columns()) EXPECT_LT(info.num_roles, kMaxOperands);
  }
}

TEST(OpTable, EngineAssignmentsFollowTheHardware) {
  auto engines = [](std::string_view m) { return op_info(*find_opcode(m)).engines; };
  for (auto m : {"load_stationary", "multiply_moving", "matmul_mx", "transpose_pe"}) {
    EXPECT_TRUE(engines(m).has(Engine::kTensor)) << m;
    EXPECT_FALSE(engines(m).has(Engine::kVector)) << m;
  }
  EXPECT_TRUE(engines("activation").has(Engine::kScalar));
  EXPECT_FALSE(engines("activation").has(Engine::kVector));
  EXPECT_TRUE(engines("tensor_scalar").has(Engine::kGpSimd));
  EXPECT_TRUE(engines("tensor_scalar").has(Engine::kScalar));
  EXPECT_FALSE(engines("tensor_tensor").has(Engine::kScalar));
  for (auto m : {"iota", "affine_select", "partition_reduce"})
    EXPECT_EQ(engines(m).bits, EngineSet{Engine::kGpSimd}.bits) << m;
  for (auto m : {"dma_copy", "dma_transpose", "nop", "sem_wait", "branch"})
    for (Engine e : kAllEngines) EXPECT_TRUE(engines(m).has(e)) << m;
  // TensorE reads SBUF only and writes PSUM only.
  for (auto m : {"load_stationary", "multiply_moving", "matmul_mx", "transpose_pe"}) {
    const OpInfo& info = op_info(*find_opcode(m));
    for (int i = 0; i < info.num_roles; ++i) {
      const OperandRole& r = info.roles[static_cast<size_t>(i)];
      const Space only = r.access == Access::kRead ? Space::kSbuf : Space::kPsum;
      EXPECT_EQ(r.spaces.bits, SpaceSet{only}.bits) << m << " " << r.name;
    }
  }
}

template <typename Table>
void expect_round_trip(const Table& t) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < t.size(); ++i) {
    const auto& [value, name] = t.entries[i];
    EXPECT_EQ(static_cast<size_t>(value), i) << name << " out of enum order";
    EXPECT_TRUE(names.insert(name).second) << "duplicate name " << name;
    EXPECT_EQ(t.name(value), name);
    EXPECT_EQ(t.find(name), value);
  }
}

TEST(NameTables, EveryEnumNameRoundTrips) {
  expect_round_trip(kAluOpNames);
  expect_round_trip(kActFuncNames);
  expect_round_trip(kAccumulateNames);
  expect_round_trip(kPerfModeNames);
  expect_round_trip(kEngineNames);
  expect_round_trip(kEngineLongNames);
  expect_round_trip(kSpaceNames);
  expect_round_trip(kTensorKindNames);
  expect_round_trip(kDtypeRuleNames);
  expect_round_trip(kFeatureNames);
  expect_round_trip(kRuleKindNames);
  // The last enumerator of each enum has a name (a new enumerator must be added here).
  EXPECT_EQ(kAluOpNames.size(), static_cast<size_t>(AluOp::kAbs) + 1);
  EXPECT_EQ(kActFuncNames.size(), static_cast<size_t>(ActFunc::kAbs) + 1);
  EXPECT_EQ(kAccumulateNames.size(), static_cast<size_t>(AccumulateFlag::kLast) + 1);
  EXPECT_EQ(kPerfModeNames.size(), static_cast<size_t>(MatmulPerfMode::kDoubleRowFp8) + 1);
  EXPECT_EQ(kSpaceNames.size(), static_cast<size_t>(Space::kHbm) + 1);
  for (Engine e : kAllEngines) {
    EXPECT_EQ(name_of(e), engine_name(e));
    EXPECT_EQ(find_engine(kEngineLongNames.name(e)), e);
  }
  for (Space s : {Space::kSbuf, Space::kPsum, Space::kHbm}) EXPECT_EQ(name_of(s), space_name(s));
}

TEST(ParamKeys, NamesUniqueDocumentedAndDefaultsRoundTrip) {
  std::set<std::string_view> names;
  const Params def;
  for (int i = 0; i < kNumParamKeys; ++i) {
    const auto k = static_cast<ParamKey>(i);
    EXPECT_TRUE(names.insert(param_key_name(k)).second) << param_key_name(k);
    EXPECT_FALSE(param_key_doc(k).empty());
    EXPECT_EQ(find_param_key(param_key_name(k)), k);
    Params p;
    parse_param(k, format_param(k, def), p);
    EXPECT_TRUE(p == def) << param_key_name(k);
    EXPECT_TRUE(param_is_default(k, p));
  }
  // Every key is taken by some op, so none is dead.
  for (int i = 0; i < kNumParamKeys; ++i) {
    bool used = false;
    for (const OpInfo& info : op_table()) used |= info.params.has(static_cast<ParamKey>(i));
    EXPECT_TRUE(used) << param_key_name(static_cast<ParamKey>(i));
  }
}

TEST(ParamKeys, CanonicalParamsKeepOnlyTheOpsKeys) {
  Params p;
  p.op0 = AluOp::kMult;
  p.value = 2.5;
  p.arg0.operand = 2;
  p.arg0.imm = 9.0f;  // dropped: an operand reference carries no immediate
  const Params c = canonical_params(p, {ParamKey::kOp0, ParamKey::kArg0});
  EXPECT_EQ(c.op0, AluOp::kMult);
  EXPECT_EQ(c.value, 0.0);
  EXPECT_EQ(c.arg0.operand, 2);
  EXPECT_EQ(c.arg0.imm, 0.0f);
}

TEST(Features, NamesAreSpecKeysAndMapToTheirFlags) {
  std::set<std::string> keys;
  const nlohmann::json schema = arch::schema_json();
  for (const auto& k : schema["keys"]) keys.insert(k["key"].get<std::string>());
  arch::CoreSpec none, all;
  all.dma.transpose = true;
  all.features = {true, true, true, true, true, true, true, true,
                  true, true, true, true, true, true, true};
  for (size_t i = 1; i < kFeatureNames.size(); ++i) {
    const auto [f, name] = kFeatureNames.entries[i];
    EXPECT_TRUE(keys.count("core." + std::string(name))) << name << " is not a spec key";
    EXPECT_FALSE(has_feature(none, f)) << name;
    EXPECT_TRUE(has_feature(all, f)) << name;
  }
  EXPECT_TRUE(has_feature(none, Feature::kNone));
}

TEST(Describe, ListsEveryOpParamAndFeature) {
  const std::string d = describe_isa();
  for (const OpInfo& info : op_table()) {
    EXPECT_NE(d.find(std::string(mnemonic(info.op))), std::string::npos) << mnemonic(info.op);
    if (info.feature != Feature::kNone)
      EXPECT_NE(d.find(std::string(kFeatureNames.name(info.feature))), std::string::npos);
  }
  for (int i = 0; i < kNumParamKeys; ++i)
    EXPECT_NE(d.find(std::string(param_key_name(static_cast<ParamKey>(i)))), std::string::npos);
}

}  // namespace
}  // namespace trnsim::isa
