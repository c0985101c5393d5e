// Text form round trips: assemble(disassemble(p)) == p and disassembly is a fixed point, on a
// hand-written program with every opcode and on built programs with awkward values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "every_op_program.h"
#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/op_table.h"

namespace trnsim::isa {
namespace {

// An operand from its fields in declaration order (the reserved bytes between them stay zero).
AccessPattern ap(Space space, num::Format dtype, int32_t start_partition, int32_t num_partitions,
                 int64_t partition_stride, int64_t offset, std::array<FreeDim, kMaxFreeDims> dims,
                 int32_t ndim) {
  AccessPattern a;
  a.space = space;
  a.dtype = dtype;
  a.start_partition = start_partition;
  a.num_partitions = num_partitions;
  a.partition_stride = partition_stride;
  a.offset = offset;
  a.dims = dims;
  a.ndim = ndim;
  return a;
}

void expect_exact(const Program& p) {
  const std::string text = disassemble(p);
  const Program back = assemble(text, "disassembly");
  EXPECT_TRUE(back == p) << text;
  EXPECT_EQ(disassemble(back), text);
}

TEST(RoundTrip, EveryOpProgram) {
  const Program p = assemble(kEveryOpProgram, "every_op.trn");
  std::set<Opcode> ops;
  for (const auto& s : p.streams)
    for (const Instruction& in : s) ops.insert(in.op);
  EXPECT_EQ(ops.size(), static_cast<size_t>(kNumOpcodes)) << "the program misses an opcode";
  expect_exact(p);
}

TEST(RoundTrip, DocsShowTheSameProgram) {
  std::ifstream in(std::string(TRNSIM_TEST_DATA_DIR) + "/../../../docs/isa.md");
  ASSERT_TRUE(in) << "docs/isa.md not found";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t section = doc.find("## Example: every opcode");
  ASSERT_NE(section, std::string::npos);
  const size_t begin = doc.find("```\n", section) + 4;
  const size_t end = doc.find("```\n", begin);
  EXPECT_EQ(doc.substr(begin, end - begin), kEveryOpProgram);
}

TEST(RoundTrip, AssemblerReadsWhatItShould) {
  const Program p = assemble(kEveryOpProgram, "every_op.trn");
  EXPECT_EQ(p.chip, "trn3");
  EXPECT_EQ(p.seed, 7u);
  EXPECT_EQ(p.num_semaphores, 7);
  ASSERT_EQ(p.tensors.size(), 6u);
  EXPECT_EQ(p.tensors[1].address, 0x20000);
  EXPECT_EQ(p.tensors[2].address, 0x40000);  // after B, aligned to kTensorAlignment
  EXPECT_TRUE(p.tensors[0].is_input());
  EXPECT_TRUE(p.tensors[2].is_output());

  const auto& sp = p.stream(Engine::kSync);
  const AccessPattern& a = sp[0].operands[1];
  EXPECT_EQ(a.space, Space::kHbm);
  EXPECT_EQ(a.dtype, num::bf16());  // a tensor operand defaults to the tensor's dtype
  EXPECT_EQ(a.num_partitions, 128);
  EXPECT_EQ(a.partition_stride, 512);
  EXPECT_EQ(sp[0].p.dma_queue, 0);
  ASSERT_EQ(sp[0].signals.size(), 1u);
  EXPECT_EQ(sp[0].signals[0], (SemSignal{0, 1}));
  EXPECT_EQ(sp[5].signals[0], (SemSignal{3, -1}));
  EXPECT_EQ(sp[5].operands[1].offset, 0x40000);
  EXPECT_EQ(sp[5].p.rounding, num::Rounding::kTowardZero);
  EXPECT_TRUE(sp[5].p.dma_accumulate);
  EXPECT_EQ(sp[1].source_line, 14);

  const auto& act = p.stream(Engine::kScalar);
  EXPECT_EQ(act[3].op, Opcode::kBranch);
  EXPECT_EQ(act[3].p.branch_target, 1);  // `loop:` labels the activation
  EXPECT_EQ(act[1].p.bias.operand, 2);
  EXPECT_EQ(act[1].p.scale.imm, 0.5f);
  EXPECT_EQ(act[1].p.func, ActFunc::kGeluApprxTanh);
  const auto& dve = p.stream(Engine::kVector);
  EXPECT_EQ(dve[4].operands[1].ndim, 2);
  EXPECT_EQ(dve[4].operands[1].dims[0], (FreeDim{64, 8}));
  EXPECT_TRUE(std::signbit(dve[9].p.value));  // value=-0
  EXPECT_EQ(p.stream(Engine::kTensor)[5].name, "matmuls done");
}

TEST(RoundTrip, AwkwardValues) {
  Program p;
  p.chip = "what if";  // not a bare word: quoted
  p.seed = std::numeric_limits<uint64_t>::max();
  p.num_semaphores = 300;  // invalid on hardware, still exact in text
  p.add_tensor("X", num::fp32(), {4, 8}, TensorKind::kInOut, 0x1000);
  p.add_tensor("Y", num::cfp8(5, 17), {16}, TensorKind::kScratch);

  Instruction t;
  t.op = Opcode::kTensorScalar;
  t.engine = Engine::kVector;
  t.num_operands = 3;
  t.operands[0] = ap(Space::kPsum, num::bf16(), 32, 7, 0, -6, {{{-3, 5}, {32767, 2}}}, 2);
  t.operands[1] = ap(Space::kSbuf, num::fp8_e3m4(), 0, 7, 0, 1 << 20, {{{1, 65535}}}, 1);
  t.operands[2] = ap(Space::kSbuf, num::fp32(), 0, 7, 0, 4, {}, 0);
  t.p.op0 = AluOp::kShiftRightLogical;
  t.p.arg0.operand = 2;
  t.p.arg1.imm = std::bit_cast<float>(0x7fa00001u);  // a signalling NaN with payload
  t.p.reverse1 = true;
  t.p.rounding = num::Rounding::kStochastic;
  t.name = "quote \" backslash \\ newline \n end";
  t.waits = {{0, -5}, {299, std::numeric_limits<int64_t>::max()}};
  t.signals = {{1, std::numeric_limits<int64_t>::min()}, {2, 0}};
  p.append(t);

  Instruction d;
  d.op = Opcode::kDmaCopy;
  d.engine = Engine::kGpSimd;
  d.num_operands = 2;
  d.operands[0] =
      ap(Space::kHbm, num::fp32(), 0, 2, 5, 0x1000 + 12, {{{1, 3}}}, 1);  // X, odd stride
  d.operands[1] = ap(Space::kHbm, num::fp32(), 0, 2, 8, 0x1000 + 2, {{{1, 3}}}, 1);  // misaligned
  d.p.dma_queue = 17;
  p.append(d);
  d.operands[1] = ap(Space::kHbm, num::int_format(num::Dtype::kInt8), 0, 1, 0, 1 << 30, {{{2, 3}}},
                     1);  // no tensor
  d.operands[0] = p.rows("Y", 0, 16);
  p.append(d);

  Instruction m;
  m.op = Opcode::kMemset;
  m.engine = Engine::kGpSimd;
  m.num_operands = 1;
  m.operands[0] = ap(Space::kSbuf, num::int_format(num::Dtype::kUint16), 96, 32, 0, 2, {}, 0);
  for (double v : {std::numeric_limits<double>::denorm_min(), -0.0, 0.1, 1e300,
                   -std::numeric_limits<double>::infinity(),
                   std::bit_cast<double>(0xfff0000000000001ull), std::nan("")}) {
    m.p.value = v;
    p.append(m);
  }
  Instruction a;
  a.op = Opcode::kActivation;
  a.engine = Engine::kScalar;
  a.num_operands = 2;
  a.operands[0] = a.operands[1] = t.operands[2];
  for (float v : {std::numeric_limits<float>::denorm_min(), 3.4028235e38f, 0.1f, -0.0f,
                  std::bit_cast<float>(0xffc00000u)}) {
    a.p.alpha = v;
    a.p.scale.imm = -v;
    p.append(a);
  }
  // Branches: to a label, to the end of the stream, and to nowhere.
  Instruction b;
  b.op = Opcode::kBranch;
  b.engine = Engine::kScalar;
  b.p.branch_target = 0;
  p.append(b);
  b.p.branch_target = 8;  // one past the last instruction
  p.append(b);
  b.p.branch_target = 99;
  b.p.reg_a = 3;
  b.p.reg_b = -7;
  b.p.reg_imm = std::numeric_limits<int64_t>::min();
  p.append(b);
  expect_exact(p);
  const std::string text = disassemble(p);
  EXPECT_NE(text.find("hbm["), std::string::npos) << text;
  EXPECT_NE(text.find("L8:"), std::string::npos) << text;
  EXPECT_NE(text.find("target=99"), std::string::npos) << text;
}

TEST(RoundTrip, ExtraOperandsAndEmptyProgram) {
  expect_exact(Program{});
  // Instruction text for diagnostics names tensors.
  Program p;
  p.add_tensor("A", num::bf16(), {128, 64}, TensorKind::kInput);
  Instruction d;
  d.op = Opcode::kDmaCopy;
  d.num_operands = 2;
  d.operands[0] = ap(Space::kSbuf, num::bf16(), 0, 128, 0, 0, {{{1, 64}}}, 1);
  d.operands[1] = p.rows("A", 64, 128);
  EXPECT_EQ(format_instruction(d, p),
            "dma_copy sbuf[0:128] [[1,64]] bf16 <- A[0:64]+4096 [[1,64]] bf16");
}

}  // namespace
}  // namespace trnsim::isa
