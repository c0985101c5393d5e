// Malformed programs: each error is an InputError naming "file:line" and the offending token.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "isa/assembler.h"

namespace trnsim::isa {
namespace {

struct BadCase {
  const char* what;
  const char* body;    // appended after a 3-line prelude
  int line;            // the line of the error
  const char* key;     // the offending token
  const char* detail;  // a phrase of the message
};

constexpr const char* kPrelude =
    ".tensor A hbm bf16 [128, 512] input\n"
    ".semaphores 2\n"
    ".engine dve\n";

class Malformed : public testing::TestWithParam<BadCase> {};

TEST_P(Malformed, NamesLineAndToken) {
  const BadCase& c = GetParam();
  try {
    assemble(std::string(kPrelude) + c.body, "bad.trn");
    FAIL() << c.what << ": no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "bad.trn:" + std::to_string(c.line)) << e.what();
    EXPECT_EQ(e.key(), c.key) << e.what();
    EXPECT_NE(e.detail().find(c.detail), std::string::npos) << e.what();
  }
}

const BadCase kCases[] = {
    {"unknown mnemonic", "nop\nfrobnicate sbuf[0:1] [] fp32\n", 5, "frobnicate",
     "unknown mnemonic"},
    {"op on a wrong engine", "activation sbuf[0:128] [[1,4]] fp32 <- sbuf[0:128] [[1,4]] fp32\n", 4,
     "activation", "not an op of the dve engine"},
    {"unknown parameter", "memset sbuf[0:128] [[1,4]] fp32 value=1 queue=3\n", 4, "queue",
     "unknown parameter for memset"},
    {"parameter given twice", "memset sbuf[0:128] [[1,4]] fp32 value=1 value=2\n", 4, "value",
     "given twice"},
    {"wrong operand count", "tensor_tensor sbuf[0:128] [[1,4]] fp32 <- sbuf[0:128] [[1,4]] fp32\n",
     4, "tensor_tensor", "takes 3 operand(s), got 2"},
    {"missing arrow", "tensor_copy sbuf[0:128] [[1,4]] fp32, sbuf[0:128] [[1,4]] fp32\n", 4,
     "tensor_copy", "then '<-'"},
    {"arrow in the wrong place",
     "select sbuf[0:1] [] fp32, sbuf[0:1] [] fp32 <- sbuf[0:1] [] "
     "fp32, sbuf[0:1] [] fp32\n",
     4, "<-", "writes 1 operand"},
    {"bad number", "memset sbuf[0:128] [[1,4]] fp32 value=1.2.3\n", 4, "1.2.3", "not a number"},
    {"two signs", "memset sbuf[0:128] [[1,4]] fp32 value=+-1\n", 4, "+-1", "not a number"},
    {"integer out of range", "memset sbuf[0:99999999999] [[1,4]] fp32\n", 4, "99999999999",
     "out of range"},
    {"bad integer", "memset sbuf[0:12x] [[1,4]] fp32\n", 4, "12x", "not an integer"},
    {"unknown tensor", "nop\n.engine sp\ndma_copy sbuf[0:1] [[1,4]] bf16 <- Z[0:1] [[1,4]]\n", 6,
     "Z", "unknown tensor"},
    {"unknown dtype", "memset sbuf[0:128] [[1,4]] fp33 value=1\n", 4, "format", "fp33"},
    {"missing dtype", "memset sbuf[0:128] [[1,4]] value=1\n", 4, "value=1", "dtype"},
    {"unknown enum value",
     "tensor_tensor sbuf[0:1] [] fp32 <- sbuf[0:1] [] bf16, sbuf[0:1] [] "
     "bf16 op0=plus\n",
     4, "plus", "expected one of: bypass, add"},
    {"column reference to a role",
     "tensor_scalar sbuf[0:128] [[1,4]] fp32 <- sbuf[0:128] "
     "[[1,4]] fp32 arg0=@1\n",
     4, "tensor_scalar", "must name a column operand"},
    {"unnamed extra operand",
     "tensor_scalar sbuf[0:128] [[1,4]] fp32 <- sbuf[0:128] [[1,4]] "
     "fp32, sbuf[0:128] [[1,1]] fp32\n",
     4, "tensor_scalar", "is not named"},
    {"bad wait", "nop wait=s0=1\n", 4, "s0=1", "sN>=VALUE"},
    {"bad signal", "nop signal=x1+1\n", 4, "x1+1", "sN+DELTA"},
    {"undefined label", "branch target=nowhere\n", 4, "nowhere", "undefined label"},
    {"label defined twice", "top:\nnop\ntop: nop\n", 6, "top", "defined twice"},
    {"label of another stream", "top: nop\n.engine act\nbranch target=top\n", 6, "top",
     "undefined label in the act stream"},
    {"unknown directive", ".stream pe\n", 4, ".stream", "unknown directive"},
    {"unknown engine", ".engine tpu\n", 4, "tpu", "unknown engine"},
    {"directive twice", ".semaphores 3\n", 4, ".semaphores", "twice"},
    {"tensor declared twice", ".tensor A hbm fp32 [4] output\n", 4, "A", "declared twice"},
    {"tensor with a bad shape", ".tensor T hbm fp32 [4, 0] output\n", 4, "T", "dimension 0"},
    {"tensor without kind", ".tensor T hbm fp32 [4]\n", 4, "<end of line>", "tensor kind"},
    {"junk after operands", "memset sbuf[0:128] [[1,4]] fp32 ]\n", 4, "]", "key=value"},
    {"five free dims", "memset sbuf[0:1] [[1,1],[1,1],[1,1],[1,1],[1,1]] fp32\n", 4, "[1,1]]",
     "more than 4 free dims"},
    {"unterminated name", "nop name=\"abc\n", 4, "\"", "unterminated"},
};

INSTANTIATE_TEST_SUITE_P(Assembler, Malformed, testing::ValuesIn(kCases),
                         [](const testing::TestParamInfo<BadCase>& i) {
                           std::string n = i.param.what;
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

TEST(Assembler, InstructionBeforeEngine) {
  try {
    assemble("# comment\n\n  nop\n", "x.trn");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "x.trn:3");
    EXPECT_EQ(e.key(), "nop");
  }
}

TEST(Assembler, MissingFile) {
  EXPECT_THROW(assemble_file("/nonexistent/program.trn"), InputError);
}

}  // namespace
}  // namespace trnsim::isa
