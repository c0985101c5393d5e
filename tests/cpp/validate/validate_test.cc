// `trnsim validate`'s cases: the calibration against VALIDATION.md holds (a model change that
// moves a case out of its band fails here), and the records carry what the CLI promises.
#include "validate/validate.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/error.h"

namespace trnsim::validate {
namespace {

TEST(Validate, SingleDmaWithinBand) {
  const std::vector<Record> r = run_targets({"dma"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].unit, "ns");
  EXPECT_EQ(r[0].measured, 1416.0);
  EXPECT_TRUE(r[0].within()) << r[0].simulated;
}

TEST(Validate, MatmulTutorialWithinBandAndOrdered) {
  const std::vector<Record> r = run_targets({"matmul-tutorial"});
  ASSERT_EQ(r.size(), 7u);  // four latencies, three speed-ups
  for (const Record& x : r) EXPECT_TRUE(x.within()) << x.case_name << ": " << x.simulated;
  // Each version faster than the one before it, as published.
  for (size_t i = 1; i < 4; ++i) EXPECT_LT(r[i].simulated, r[i - 1].simulated) << r[i].case_name;
}

TEST(Validate, JsonRecordsHaveTheDocumentedKeys) {
  const nlohmann::json j = records_json(run_targets({"dma"}));
  ASSERT_EQ(j.size(), 1u);
  for (const char* key : {"target", "case", "measured", "simulated", "unit", "error", "tolerance",
                          "within", "source", "note", "fitted"})
    EXPECT_TRUE(j[0].contains(key)) << key;
  EXPECT_NE(format_records(run_targets({"dma"})).find("1 of 1 cases"), std::string::npos);
}

TEST(Validate, FittedAndCheckedCasesAreCountedApart) {
  // The allreduce sweep: its small sizes set the runtime's launch cost, its large ones check
  // the data movement.
  const std::vector<Record> r = run_targets({"allreduce-2rank"});
  size_t fitted = 0;
  for (const Record& x : r) fitted += x.fitted.empty() ? 0 : 1;
  EXPECT_GT(fitted, 0u);
  EXPECT_LT(fitted, r.size());
  const std::string text = format_records(r);
  EXPECT_NE(text.find(fmt::format("checked (nothing fitted on them): {} of {}", r.size() - fitted,
                                  r.size() - fitted)),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(fmt::format("fitted (they set a parameter; see --json): {} of {}", fitted, fitted)),
      std::string::npos)
      << text;
}

TEST(Validate, TrnOneDecodeHandshakesFitOneTpotAndHoldTheOthers) {
  // One runtime key (neuron-2.18's sync.peer_us) is fitted on one Trn1 TPOT; the other three
  // Trn1 TPOTs check it, so a change to the decode step's kernels or all-reduces that moves
  // them out of the band fails here.
  const std::vector<Record> r = run_targets({"serving-s9"});
  size_t trn1_tpots = 0, fitted = 0;
  for (const Record& x : r) {
    if (x.note.find("trn1.32xlarge") == std::string::npos) continue;
    if (x.case_name.find("TPOT") == std::string::npos) continue;
    ++trn1_tpots;
    EXPECT_TRUE(x.within()) << x.case_name << ": " << x.simulated << " ms";
    EXPECT_NE(x.note.find("runtime neuron-2.18"), std::string::npos) << x.note;
    if (!x.fitted.empty()) {
      ++fitted;
      EXPECT_EQ(x.case_name, "llama-2-70b b1 128/128 TPOT");
    }
  }
  EXPECT_EQ(trn1_tpots, 4u);
  EXPECT_EQ(fitted, 1u);
}

TEST(Validate, AddedTargetsRunAfterTheBuiltInOnesAndReplaceByName) {
  const size_t builtin = targets().size();
  add_target({"extra", "a test target", [] {
                Record r;
                r.target = "extra";
                r.case_name = "one";
                r.measured = 1;
                r.simulated = 1;
                return std::vector<Record>{r};
              }});
  add_target({"extra", "replaced", [] { return std::vector<Record>{}; }});
  ASSERT_EQ(targets().size(), builtin + 1);
  EXPECT_EQ(targets().back().doc, "replaced");
  EXPECT_TRUE(run_targets({"extra"}).empty());
  clear_added_targets();
  EXPECT_EQ(targets().size(), builtin);
  EXPECT_THROW(run_targets({"extra"}), InputError);
}

TEST(Validate, UnknownTargetListsTheKnownOnes) {
  try {
    run_targets({"nope"});
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul-tutorial"), std::string::npos) << e.what();
  }
}

TEST(Validate, RecordError) {
  Record r;
  r.measured = 100;
  r.simulated = 110;
  EXPECT_DOUBLE_EQ(r.error(), 0.1);
  EXPECT_TRUE(r.within());
  r.simulated = 116;
  EXPECT_FALSE(r.within());
}

}  // namespace
}  // namespace trnsim::validate
