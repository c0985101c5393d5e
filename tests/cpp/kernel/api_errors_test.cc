// API misuse is an InputError thrown by the call that made it, naming the call and operands.
#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "kernel/builder.h"
#include "kernel_test_util.h"

namespace trnsim::kernel_test {
namespace {

using kernel::KernelBuilder;

// The message of the InputError `f` throws ("" if none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void expect_mentions(const std::string& msg, std::initializer_list<std::string> words) {
  ASSERT_FALSE(msg.empty()) << "no InputError";
  for (const std::string& w : words) EXPECT_NE(msg.find(w), std::string::npos) << msg;
}

TEST(ApiErrors, MatmulContractionOver128) {
  KernelBuilder kb(chip("trn2"));
  auto s = kb.sbuf("stat", num::bf16(), {128, 2, 64});
  auto dst = kb.psum("dst", num::fp32(), {64, 512});
  auto mv = kb.sbuf("mov", num::bf16(), {128, 512});
  // A [256-long K] stationary cannot be expressed on 128 partitions: the partition count is
  // the contraction. Ask for 129 partitions instead.
  expect_mentions(error_of([&] {
                    (void)kb.sbuf("too_many", num::bf16(), {129, 4});
                  }),
                  {"sbuf('too_many')", "129 partitions"});
  auto st64 = kb.sbuf("st64", num::bf16(), {64, 64});
  expect_mentions(error_of([&] { kb.matmul(dst, st64, mv); }),
                  {"matmul", "'moving'", "'mov'", "K = 128", "K = 64"});
  auto wide = kb.sbuf("wide", num::bf16(), {128, 256});
  auto dst256 = kb.psum("dst256", num::fp32(), {128, 512});
  expect_mentions(error_of([&] { kb.matmul(dst256, wide, mv); }),
                  {"matmul", "'stationary'", "'wide'", "M = 256"});
  auto mv1024 = kb.sbuf("mov1024", num::bf16(), {128, 1024});
  auto st = kb.sbuf("st", num::bf16(), {128, 64});
  expect_mentions(error_of([&] { kb.matmul(dst, st, mv1024); }), {"matmul", "N = 1024"});
  (void)s;
}

TEST(ApiErrors, MatmulSpacesAndShapes) {
  KernelBuilder kb(chip("trn1"));
  auto st = kb.sbuf("st", num::bf16(), {128, 64});
  auto mv = kb.sbuf("mv", num::bf16(), {128, 512});
  auto sb_dst = kb.sbuf("sb_dst", num::fp32(), {64, 512});
  expect_mentions(error_of([&] { kb.matmul(sb_dst, st, mv); }), {"matmul", "'dst'", "PSUM"});
  auto bad = kb.psum("bad", num::fp32(), {64, 256});
  expect_mentions(error_of([&] { kb.matmul(bad, st, mv); }), {"matmul", "'bad'", "[64, 512]"});
  auto bf = kb.psum("bf", num::bf16(), {64, 512});  // no bf16 PSUM before NC-v4
  expect_mentions(error_of([&] { kb.matmul(bf, st, mv); }), {"matmul", "bf16"});
}

TEST(ApiErrors, PsumTileOverABank) {
  KernelBuilder kb(chip("trn1"));
  auto st = kb.sbuf("st", num::bf16(), {128, 128});
  auto mv = kb.sbuf("mv", num::bf16(), {128, 512});
  auto two_banks = kb.psum("two_banks", num::fp32(), {128, 1024});
  // [256, 768) of a two-bank tile crosses the bank boundary at 512 elements.
  expect_mentions(error_of([&] {
                    kb.matmul(two_banks(kernel::all, {256, 768}), st, mv);
                  }),
                  {"matmul", "psum_bank", "'two_banks'"});
  // Inside one bank it is fine.
  EXPECT_NO_THROW(kb.matmul(two_banks(kernel::all, {512, 1024}), st, mv));
}

TEST(ApiErrors, TileLargerThanAPartitionNamesTheTileAndBytes) {
  KernelBuilder kb(chip("trn1"));
  const int64_t usable = chip("trn1").core.sbuf.usable_bytes_per_partition;
  expect_mentions(error_of([&] {
                    (void)kb.sbuf("huge", num::fp32(), {128, usable / 4 + 16});
                  }),
                  {"sbuf('huge')", std::to_string(usable + 64) + " bytes", std::to_string(usable)});
  expect_mentions(error_of([&] {
                    (void)kb.psum("wide", num::fp32(), {128, 8 * 512 + 8});
                  }),
                  {"psum('wide')", "16416 bytes", "16384"});
}

// Tiles are placed at build(): only an instruction whose own tiles cannot be in memory at
// once is an error, naming the instruction, the tiles and the bytes.
TEST(ApiErrors, InstructionWhoseTilesCannotFitNamesThem) {
  KernelBuilder kb(chip("trn1"));
  const int64_t usable = chip("trn1").core.sbuf.usable_bytes_per_partition;
  const int64_t f = usable / 4 / 2 + 16;  // two of them do not fit
  auto a = kb.sbuf("first", num::fp32(), {128, f});
  auto b = kb.sbuf("second", num::fp32(), {128, f});
  kb.memset(a, 1.0);
  kb.tensor_copy(b, a);
  kb.tensor_tensor(a, a, b, isa::AluOp::kAdd);  // `a` lives on: the copy cannot go in place
  expect_mentions(error_of([&] { (void)kb.build(); }),
                  {"kernel build", "tensor_copy", "'first'", "'second'",
                   std::to_string(f * 4) + " B", std::to_string(usable)});
  // PSUM has 8 banks and does not spill: nine one-bank tiles read by one instruction... are
  // at most 3 operands; nine live at once through their uses are too many.
  KernelBuilder kp(chip("trn1"));
  std::vector<kernel::Tile> banks;
  for (int i = 0; i < 9; ++i) {
    banks.push_back(kp.psum("bank" + std::to_string(i), num::fp32(), {128, 512}));
    kp.memset(banks.back(), 0.0);
  }
  auto s = kp.sbuf("s", num::fp32(), {128, 512});
  for (const auto& t : banks) kp.tensor_tensor(s, s, t, isa::AluOp::kAdd);
  expect_mentions(error_of([&] { (void)kp.build(); }), {"kernel build", "'bank8'", "PSUM", "2048"});
}

TEST(ApiErrors, PartitionMismatchAndDtypes) {
  KernelBuilder kb(chip("trn2"));
  auto a = kb.sbuf("a", num::fp32(), {128, 64});
  auto b = kb.sbuf("b", num::fp32(), {64, 64});
  expect_mentions(error_of([&] { kb.tensor_tensor(a, a, b, isa::AluOp::kAdd); }),
                  {"tensor_tensor", "'b'", "64"});
  auto p = kb.psum("p", num::fp32(), {128, 64});
  expect_mentions(error_of([&] { kb.tensor_copy(a, p, isa::Engine::kGpSimd); }),
                  {"tensor_copy", "GpSimd cannot access PSUM"});
  auto x = kb.input("x", num::fp32(), {128, 64});
  expect_mentions(error_of([&] { kb.dma_copy(p, x); }), {"dma_copy", "'dst'", "PSUM"});
  auto y = kb.input("y", num::fp32(), {128, 32});
  expect_mentions(error_of([&] { kb.dma_copy(a, y); }), {"dma_copy", "8192", "4096"});
  // Writing through a broadcast view.
  expect_mentions(error_of([&] { kb.memset(a(kernel::all, 0).broadcast(1, 4), 0.0); }),
                  {"memset", "broadcast"});
}

TEST(ApiErrors, GenerationFeatures) {
  KernelBuilder kb(chip("trn1"));
  auto a = kb.sbuf("a", num::bf16(), {32, 32});
  auto b = kb.sbuf("b", num::bf16(), {32, 32});
  auto x = kb.input("x", num::bf16(), {32, 32});
  expect_mentions(error_of([&] { kb.dma_transpose(a, x); }), {"dma_transpose", "trn1"});
  EXPECT_NO_THROW(kb.transpose(b, a, isa::Engine::kVector));
}

TEST(ApiErrors, BuildTwice) {
  KernelBuilder kb(chip("trn1"));
  auto a = kb.sbuf("a", num::fp32(), {128, 4});
  kb.memset(a, 1.0);
  (void)kb.build();
  expect_mentions(error_of([&] { kb.memset(a, 2.0); }), {"memset", "already built"});
}

}  // namespace
}  // namespace trnsim::kernel_test

namespace trnsim::kernel_test {
namespace {

// A view of another builder's memory names bytes that mean nothing in this kernel (the
// Python audit found such a copy silently reading another tile's bytes): refused, naming the
// operand.
TEST(ApiErrors, ViewFromAnotherBuilder) {
  kernel::KernelBuilder other(chip("trn2"));
  auto foreign = other.sbuf("foreign", num::fp32(), {4, 4});
  kernel::KernelBuilder kb(chip("trn2"));
  auto mine = kb.sbuf("mine", num::fp32(), {4, 4});
  const std::string msg = error_of([&] { kb.tensor_copy(mine, foreign); });
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("another KernelBuilder"), std::string::npos) << msg;
  EXPECT_NE(msg.find("foreign"), std::string::npos) << msg;
  kb.tensor_copy(mine, kb.sbuf("also_mine", num::fp32(), {4, 4}));  // its own views still work
}

}  // namespace
}  // namespace trnsim::kernel_test
