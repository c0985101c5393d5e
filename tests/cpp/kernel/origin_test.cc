// Where instructions come from (isa::Origin): the kernel builder stamps each instruction with
// the source position set by set_source and each operand with its tile's or tensor's name; the
// trace labels and the profile's critical path show them; they are not part of a program's
// meaning (equality). A text program's lines point into its file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "core/timing/timing_profile.h"
#include "core/timing/timing_run.h"
#include "isa/assembler.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"
#include "profile/trace.h"

namespace trnsim::kernel_test {
namespace {

using kernel::KernelBuilder;

// load x -> xt (line 10), xt * 2 -> yt (line 11), store yt -> y (line 12), all from "k.py".
isa::Program scaled_copy(const std::string& file) {
  KernelBuilder kb(chip("trn2"));
  auto x = kb.input("x", num::fp32(), {128, 512});
  auto y = kb.output("y", num::fp32(), {128, 512});
  auto xt = kb.sbuf("xt", num::fp32(), {128, 512});
  auto yt = kb.sbuf("yt", num::fp32(), {128, 512});
  const int32_t f = file.empty() ? -1 : kb.add_source_file(file);
  kb.set_source(f, 10);
  kb.dma_copy(xt, x);
  kb.set_source(f, 11);
  kb.tensor_scalar(yt, xt, {isa::AluOp::kMult, 2.0f});
  kb.set_source(f, 12);
  kb.dma_copy(y, yt);
  return kb.build();
}

const isa::Instruction& only(const isa::Program& p, isa::Opcode op) {
  for (const isa::Stream& s : p.streams)
    for (const isa::Instruction& in : s)
      if (in.op == op) return in;
  throw std::logic_error("no such instruction");
}

TEST(Origin, InstructionsCarryTheSourceAndTheirOperandsNames) {
  const isa::Program p = scaled_copy("/src/k.py");
  const isa::Instruction& mul = only(p, isa::Opcode::kTensorScalar);
  EXPECT_EQ(mul.source_line, 11);
  EXPECT_EQ(isa::source_of(p, mul), "/src/k.py:11");
  EXPECT_EQ(p.symbol(mul.origin.operands[0]), "yt");
  EXPECT_EQ(p.symbol(mul.origin.operands[1]), "xt");
  int loads = 0, stores = 0;
  for (const isa::Stream& s : p.streams)
    for (const isa::Instruction& in : s) {
      if (in.op != isa::Opcode::kDmaCopy) continue;
      const bool load = p.symbol(in.origin.operands[1]) == "x";
      loads += load;
      stores += !load;
      EXPECT_EQ(isa::source_of(p, in), load ? "/src/k.py:10" : "/src/k.py:12");
      EXPECT_EQ(p.symbol(in.origin.operands[0]), load ? "xt" : "y");
      if (!load) EXPECT_EQ(p.symbol(in.origin.operands[1]), "yt");
    }
  EXPECT_EQ(loads, 1);
  EXPECT_EQ(stores, 1);
}

TEST(Origin, IsNotPartOfAProgramsMeaning) {
  const isa::Program a = scaled_copy("/src/k.py"), b = scaled_copy("");
  EXPECT_EQ(isa::source_of(b, only(b, isa::Opcode::kTensorScalar)), "line 11");
  EXPECT_TRUE(a == b);
  EXPECT_EQ(isa::source_of(a, isa::Instruction{}), "");
  EXPECT_EQ(a.symbol(-1), "");
  EXPECT_EQ(a.symbol(1 << 20), "");
}

TEST(Origin, SetSourceRefusesAnUnregisteredFileOrANegativeLine) {
  KernelBuilder kb(chip("trn2"));
  EXPECT_THROW(kb.set_source(3, 1), InputError);
  const int32_t f = kb.add_source_file("k.py");
  EXPECT_THROW(kb.set_source(f, -1), InputError);
  EXPECT_NO_THROW(kb.set_source(f, 0));
  EXPECT_NO_THROW(kb.set_source(-1, 0));
}

TEST(Origin, TraceLabelsAndTheCriticalPathNameTheSource) {
  const isa::Program p = scaled_copy("/src/k.py");
  profile::Trace trace;
  core::TimingOptions o;
  o.trace = &trace;
  ASSERT_TRUE(core::run_timing(chip("trn2"), p, o).ok());
  bool seen = false;
  for (const profile::Label& l : trace.labels()) {
    if (l.name != "tensor_scalar") continue;
    seen = true;
    std::string source, operands;
    for (const auto& [k, v] : l.args) {
      if (k == "source") source = v;
      if (k == "operands") operands = v;
    }
    EXPECT_EQ(source, "/src/k.py:11");
    EXPECT_TRUE(operands.starts_with("dst=yt sbuf[")) << operands;
    EXPECT_NE(operands.find("src=xt sbuf["), std::string::npos) << operands;
  }
  EXPECT_TRUE(seen);

  const core::CoreProfile prof = core::profile_program(chip("trn2"), p);
  ASSERT_FALSE(prof.path.top.empty());
  for (const core::PathItem& it : prof.path.top) {
    EXPECT_TRUE(it.source.starts_with("/src/k.py:")) << it.name;
    EXPECT_EQ(it.source, "/src/k.py:" + std::to_string(it.line));
  }
}

TEST(Origin, ATextProgramsLinesPointIntoItsFile) {
  const auto path = std::filesystem::temp_directory_path() / "trnsim_origin_test.s";
  {
    std::ofstream f(path);
    f << ".chip trn2\n.engine pool\n  tensor_copy sbuf[0:128]+1024 [[1,64]] fp32 <- "
         "sbuf[0:128] [[1,64]] fp32\n";
  }
  const isa::Program p = isa::assemble_file(path);
  std::filesystem::remove(path);
  const isa::Instruction& in = only(p, isa::Opcode::kTensorCopy);
  EXPECT_EQ(isa::source_of(p, in), path.string() + ":3");
}

}  // namespace
}  // namespace trnsim::kernel_test
