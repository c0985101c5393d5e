// `trnsim isa`: the instruction set from the op table, every op or some, as text or JSON, and
// with --chip which ops the generation's core has; a name that is no op is bad input (2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli_test_util.h"
#include "isa/op_table.h"

namespace trnsim::cli {
namespace {

TEST(IsaCli, ListsEveryOpAndTheNames) {
  const CliResult r = run_cli({"isa"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, isa::describe_isa());
  for (const isa::OpInfo& info : isa::op_table())
    EXPECT_TRUE(has(r.out, std::string(isa::mnemonic(info.op)) + " ")) << isa::mnemonic(info.op);
}

TEST(IsaCli, SomeOpsAndWhatAChipLacks) {
  const CliResult r = run_cli({"isa", "matmul_mx", "find_index8", "--chip", "trn2"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "matmul_mx") && has(r.out, "find_index8"));
  EXPECT_FALSE(has(r.out, "multiply_moving"));
  EXPECT_TRUE(has(r.out, "not on trn2: its core lacks features.mx_matmul"));
  EXPECT_FALSE(has(run_cli({"isa", "matmul_mx", "--chip", "trn3"}).out, "not on"));
}

TEST(IsaCli, JsonRecordsWithAvailability) {
  const CliResult r = run_cli({"isa", "--json", "--chip", "trn1"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), static_cast<size_t>(isa::kNumOpcodes));
  std::set<std::string> unavailable;
  for (const nlohmann::json& op : j) {
    ASSERT_TRUE(op.contains("engines") && op.contains("operands") && op.contains("doc"));
    if (!op["available"].get<bool>()) unavailable.insert(op["op"].get<std::string>());
  }
  // NC-v2 has neither MX nor the NC-v4 VectorE exponential nor core-to-core instructions nor
  // the NC-v3 range_select.
  for (const char* op :
       {"matmul_mx", "quantize_mx", "exponential", "core_barrier", "sendrecv", "range_select"})
    EXPECT_TRUE(unavailable.count(op)) << op;
  EXPECT_FALSE(unavailable.count("max8"));
  const nlohmann::json mx = nlohmann::json::parse(run_cli({"isa", "matmul_mx", "--json"}).out);
  EXPECT_EQ(mx[0]["feature"], "features.mx_matmul");
  EXPECT_FALSE(mx[0].contains("available"));  // no chip, no verdict
}

TEST(IsaCli, BadInputIsTwo) {
  CliResult r = run_cli({"isa", "no_such_op"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "no_such_op") && has(r.err, "trnsim isa"));
  r = run_cli({"isa", "--set", "core.tensor.clock_ghz=3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--chip"));
  r = run_cli({"isa", "--chip", "trn9"});
  EXPECT_EQ(r.code, 2);
}

}  // namespace
}  // namespace trnsim::cli
