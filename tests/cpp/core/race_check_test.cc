// The race checker against hand-written programs (tests/cpp/data/races): each broken one
// reports exactly the finding its comment states, naming both instructions and the bytes, and
// each corrected twin (*.fixed.s) reports nothing, on trn1, trn2 and trn3. Then the rules one
// at a time: the DMA write barrier as spec data, loops, semaphores with several signallers,
// the size limit and the report's two forms.
#include "core/race/race_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "isa/assembler.h"
#include "isa/disassembler.h"
#include "isa/every_op_program.h"
#include "isa/validate.h"

namespace trnsim::core {
namespace {

using isa::Engine;
using isa::Space;

const std::vector<std::string> kGenerations{"trn1", "trn2", "trn3"};

const arch::ChipSpec& chip(const std::string& name) {
  static std::map<std::string, arch::ChipSpec> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, arch::load_chip(name)).first;
  return it->second;
}

std::filesystem::path races_dir() { return std::filesystem::path(TRNSIM_TEST_DATA_DIR) / "races"; }

isa::Program load(const std::string& file) { return isa::assemble_file(races_dir() / file); }

struct At {
  Engine stream;
  int32_t index;
};

struct Broken {
  std::string file;
  FindingKind kind;
  At first, second;  // second.index < 0: none
  std::optional<MemRange> range;
  int32_t semaphore = -1;
};

MemRange onchip(Space s, int32_t p0, int32_t p1, int64_t b0, int64_t b1) {
  return {s, "", p0, p1, b0, b1};
}

const std::vector<Broken>& broken() {
  static const std::vector<Broken> cases{
      {"raw_missing_wait.s",
       FindingKind::kReadAfterWrite,
       {Engine::kScalar, 0},
       {Engine::kVector, 0},
       onchip(Space::kSbuf, 0, 127, 0, 1024)},
      {"war.s",
       FindingKind::kWriteAfterRead,
       {Engine::kGpSimd, 0},
       {Engine::kVector, 0},
       onchip(Space::kSbuf, 0, 63, 0, 512)},
      {"waw.s",
       FindingKind::kWriteAfterWrite,
       {Engine::kVector, 0},
       {Engine::kGpSimd, 0},
       onchip(Space::kSbuf, 0, 127, 128, 256)},
      {"dma_vs_compute.s",
       FindingKind::kReadAfterWrite,
       {Engine::kSync, 0},
       {Engine::kScalar, 0},
       onchip(Space::kSbuf, 0, 127, 0, 1024)},
      {"two_queues.s",
       FindingKind::kWriteAfterWrite,
       {Engine::kSync, 0},
       {Engine::kSync, 1},
       onchip(Space::kSbuf, 0, 127, 0, 1024)},
      {"deadlock.s",
       FindingKind::kDeadlock,
       {Engine::kScalar, 0},
       {Engine::kVector, 0},
       std::nullopt,
       0},
      {"wait_too_high.s",
       FindingKind::kUnsatisfiableWait,
       {Engine::kScalar, 0},
       {Engine::kSync, -1},
       std::nullopt,
       0},
  };
  return cases;
}

void expect_names(const InstrRef& got, const At& want, const isa::Program& p) {
  if (want.index < 0) {
    EXPECT_FALSE(got.valid());
    return;
  }
  ASSERT_TRUE(got.valid());
  EXPECT_EQ(got.stream, want.stream);
  EXPECT_EQ(got.index, want.index);
  const isa::Instruction& in = p.stream(want.stream).at(static_cast<size_t>(want.index));
  EXPECT_EQ(got.text, isa::format_instruction(in, p));
  EXPECT_EQ(got.source_line, in.source_line);
  EXPECT_GT(got.source_line, 0);
}

void expect_range(const std::optional<MemRange>& got, const std::optional<MemRange>& want) {
  ASSERT_EQ(got.has_value(), want.has_value());
  if (!want) return;
  EXPECT_EQ(got->space, want->space);
  EXPECT_EQ(got->tensor, want->tensor);
  EXPECT_EQ(got->partition_first, want->partition_first);
  EXPECT_EQ(got->partition_last, want->partition_last);
  EXPECT_EQ(got->byte_begin, want->byte_begin);
  EXPECT_EQ(got->byte_end, want->byte_end);
}

TEST(RaceCheck, EachBrokenProgramReportsExactlyItsFinding) {
  for (const Broken& b : broken())
    for (const std::string& g : kGenerations) {
      SCOPED_TRACE(b.file + " on " + g);
      const isa::Program p = load(b.file);
      EXPECT_TRUE(isa::validate(p, chip(g)).empty());  // the hardware rules hold: only sync fails
      const RaceReport r = check_races(p, chip(g));
      EXPECT_TRUE(r.checked);
      ASSERT_EQ(r.findings.size(), 1u) << format_race_report(r);
      const Finding& f = r.findings[0];
      EXPECT_EQ(f.kind, b.kind) << format_finding(f);
      expect_names(f.first, b.first, p);
      expect_names(f.second, b.second, p);
      expect_range(f.range, b.range);
      EXPECT_EQ(f.semaphore, b.semaphore);
    }
}

TEST(RaceCheck, EveryCorrectedTwinIsClean) {
  int twins = 0;
  for (const auto& entry : std::filesystem::directory_iterator(races_dir())) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".fixed.s")) continue;
    ++twins;
    for (const std::string& g : kGenerations) {
      SCOPED_TRACE(name + " on " + g);
      const isa::Program p = load(name);
      EXPECT_TRUE(isa::validate(p, chip(g)).empty());
      const RaceReport r = check_races(p, chip(g));
      EXPECT_TRUE(r.clean()) << format_race_report(r);
      EXPECT_GT(r.instructions, 0u);
    }
  }
  EXPECT_EQ(twins, 9);  // every broken program has one, plus overwrite_same_queue
  for (const Broken& b : broken()) {
    const std::string twin = b.file.substr(0, b.file.size() - 2) + ".fixed.s";
    EXPECT_TRUE(std::filesystem::exists(races_dir() / twin)) << twin;
  }
}

// The docs' every-opcode program (docs/isa.md) is a correct program, not only valid syntax. It
// validates on trn3 alone, but the order does not depend on which ops exist, so it is checked
// under every generation's DMA rules (trn1's weaker write barrier included).
TEST(RaceCheck, EveryOpProgramIsClean) {
  const isa::Program p = isa::assemble(kEveryOpProgram, "every_op.trn");
  for (const std::string& g : kGenerations) {
    const RaceReport r = check_races(p, chip(g));
    EXPECT_TRUE(r.clean()) << g << "\n" << format_race_report(r);
    EXPECT_GT(r.conflicting_pairs, 0u) << g;  // it does share bytes between agents
  }
}

// The one rule that is generation data: trn1's "write-after-write" barrier lets a reload on the
// spill's own DMA queue read before the spill lands; trn2's and trn3's "strong-order-write"
// does not. The same program under a what-if trn2 with trn1's barrier races again, so the
// verdict follows the spec field, not the chip's name.
TEST(RaceCheck, TheDmaWriteBarrierDecidesASpillAndReloadOnOneQueue) {
  const isa::Program p = load("reload_same_queue.s");
  const isa::HbmTensor& t = *p.find_tensor("T");
  for (const std::string& g : kGenerations) {
    SCOPED_TRACE(g);
    EXPECT_TRUE(isa::validate(p, chip(g)).empty());
  }
  const RaceReport trn1 = check_races(p, chip("trn1"));
  EXPECT_EQ(trn1.dma_write_barrier, "write-after-write");
  ASSERT_EQ(trn1.findings.size(), 1u) << format_race_report(trn1);
  const Finding& f = trn1.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kReadAfterWrite);
  expect_names(f.first, {Engine::kSync, 0}, p);
  expect_names(f.second, {Engine::kSync, 1}, p);
  expect_range(f.range, MemRange{Space::kHbm, "T", 0, 0, t.address, t.address + t.bytes()});
  EXPECT_EQ(f.first.agent, "dma queue 0 from sp on engine group 0 (16 engines)");
  EXPECT_NE(format_finding(f).find("hbm tensor T bytes 0-131071"), std::string::npos)
      << format_finding(f);

  for (const char* g : {"trn2", "trn3"}) {
    const RaceReport r = check_races(p, chip(g));
    EXPECT_EQ(r.dma_write_barrier, "strong-order-write") << g;
    EXPECT_TRUE(r.clean()) << g << "\n" << format_race_report(r);
  }
  const arch::ChipSpec what_if =
      arch::load_chip("trn2", {{"core.dma.write_barrier", "\"write-after-write\""}});
  EXPECT_EQ(check_races(p, what_if).findings.size(), 1u);
}

isa::Program assemble(const std::string& text) { return isa::assemble(text, "test.s"); }

constexpr const char* kLoop = R"(
.engine dve
  reg_set rd=r0 imm=0
loop:
  memset sbuf[0:128] [[1,64]] fp32 value=1 signal=s0+1
  reg_alu rd=r0 ra=r0 op0=add imm=1
  branch target=loop ra=r0 op0=is_lt imm=4
.engine act
  activation sbuf[0:128]+256 [[1,64]] fp32 <- sbuf[0:128] [[1,64]] fp32 func=exp WAIT
)";

std::string with(std::string text, const std::string& what, const std::string& by) {
  text.replace(text.find(what), what.size(), by);
  return text;
}

// Loops run as the sequencer runs them: the fourth signal of a four-pass loop exists, a
// fifth does not, and a race inside a loop is one finding counting its executions.
TEST(RaceCheck, LoopsAreUnrolled) {
  const RaceReport ok = check_races(assemble(with(kLoop, "WAIT", "wait=s0>=4")), chip("trn2"));
  EXPECT_TRUE(ok.clean()) << format_race_report(ok);
  EXPECT_EQ(ok.instructions, 1u + 4u * 3u + 1u);

  const RaceReport five = check_races(assemble(with(kLoop, "WAIT", "wait=s0>=5")), chip("trn2"));
  ASSERT_EQ(five.findings.size(), 1u);
  EXPECT_EQ(five.findings[0].kind, FindingKind::kUnsatisfiableWait);
  EXPECT_NE(five.findings[0].detail.find("add 4 in all"), std::string::npos);

  const RaceReport racy = check_races(assemble(with(kLoop, "WAIT", "")), chip("trn2"));
  ASSERT_EQ(racy.findings.size(), 1u) << format_race_report(racy);
  const Finding& f = racy.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kReadAfterWrite);
  EXPECT_EQ(f.count, 4);
  EXPECT_EQ(f.first.stream, Engine::kVector);
  EXPECT_EQ(f.first.index, 1);
  EXPECT_EQ(f.first.occurrence, 0);
  EXPECT_NE(format_finding(f).find("(4 executions)"), std::string::npos);

  const RaceReport endless =
      check_races(assemble(".engine dve\nl: nop\n  branch target=l\n"), chip("trn2"));
  EXPECT_FALSE(endless.checked);
}

constexpr const char* kTwoSignallers = R"(
.tensor A hbm fp32 [128, 64] input
.tensor B hbm fp32 [128, 64] input
.engine sp
  dma_copy sbuf[0:128] [[1,64]] fp32 <- A[0:128] [[1,64]] queue=0 signal=s0+1
  dma_copy sbuf[0:128]+256 [[1,64]] fp32 <- B[0:128] [[1,64]] queue=1 signal=s0+1
.engine act
  activation sbuf[0:128]+512 [[1,128]] fp32 <- sbuf[0:128] [[1,128]] fp32 func=exp WAIT
)";

// Two DMA queues signal one semaphore: waiting for 2 orders the reader after both; waiting
// for 1 after neither (either may have been the one), so both loads race with the read.
TEST(RaceCheck, SeveralSignallersOfOneSemaphore) {
  const RaceReport both =
      check_races(assemble(with(kTwoSignallers, "WAIT", "wait=s0>=2")), chip("trn2"));
  EXPECT_TRUE(both.clean()) << format_race_report(both);
  const RaceReport one =
      check_races(assemble(with(kTwoSignallers, "WAIT", "wait=s0>=1")), chip("trn2"));
  ASSERT_EQ(one.findings.size(), 2u) << format_race_report(one);
  for (const Finding& f : one.findings) {
    EXPECT_EQ(f.kind, FindingKind::kReadAfterWrite);
    EXPECT_EQ(f.first.stream, Engine::kSync);
    EXPECT_EQ(f.second.stream, Engine::kScalar);
  }
  EXPECT_EQ(one.findings[0].range->byte_begin, 0);
  EXPECT_EQ(one.findings[1].range->byte_begin, 256);

  // A semaphore that goes down, from two agents: no signal count tells what happened.
  const RaceReport down =
      check_races(assemble(with(with(kTwoSignallers, "queue=1 signal=s0+1", "queue=1 signal=s0-1"),
                                "WAIT", "wait=s0>=1")),
                  chip("trn2"));
  ASSERT_FALSE(down.findings.empty());
  EXPECT_EQ(down.findings[0].kind, FindingKind::kMultipleSignallers);
  EXPECT_EQ(down.findings[0].semaphore, 0);
  EXPECT_EQ(down.findings[0].first.index, 0);
  EXPECT_EQ(down.findings[0].second.index, 1);
}

TEST(RaceCheck, TooBigIsSaidNotSkipped) {
  const isa::Program p = load("raw_missing_wait.s");
  RaceCheckOptions small;
  small.max_instructions = 1;
  const RaceReport r = check_races(p, chip("trn2"), small);
  EXPECT_FALSE(r.checked);
  EXPECT_FALSE(r.clean());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].kind, FindingKind::kTooBig);
  EXPECT_NE(format_race_report(r).find("not checked on trn2"), std::string::npos);

  RaceCheckOptions narrow;
  narrow.max_operand_elements = 100;
  const RaceReport wide = check_races(p, chip("trn2"), narrow);
  EXPECT_FALSE(wide.checked);
  EXPECT_EQ(wide.findings.at(0).first.stream, Engine::kVector);  // the first instruction checked
}

// One line per finding plus a summary, the same on every run; the JSON says the same.
TEST(RaceCheck, ReportsAsTextAndJson) {
  const isa::Program p = load("raw_missing_wait.s");
  const RaceReport r = check_races(p, chip("trn2"));
  const std::string text = format_race_report(r);
  EXPECT_EQ(text, format_race_report(check_races(p, chip("trn2"))));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  for (const char* part :
       {"read-after-write: act[0] (raw_missing_wait.s:7) `activation sbuf[0:128] [[1,256]] fp32 "
        "<- ",
        " and dve[0] (raw_missing_wait.s:10) `tensor_copy sbuf[0:128]+8192 [[1,256]] fp32 <- ",
        "are not ordered; both touch sbuf partitions 0-127 bytes 0-1023\n",
        "1 finding on trn2 (DMA write barrier: strong-order-write): 2 instructions executed"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;

  const nlohmann::json j = race_report_json(r);
  EXPECT_EQ(j["race_free"], false);
  EXPECT_EQ(j["checked"], true);
  const nlohmann::json& f = j["findings"][0];
  EXPECT_EQ(f["kind"], "read-after-write");
  EXPECT_EQ(f["first"]["stream"], "act");
  EXPECT_EQ(f["first"]["line"], 7);
  EXPECT_TRUE(f["first"]["source"].get<std::string>().ends_with("races/raw_missing_wait.s:7"));
  EXPECT_EQ(f["second"]["stream"], "dve");
  EXPECT_EQ(f["second"]["index"], 0);
  EXPECT_EQ(f["memory"]["space"], "sbuf");
  EXPECT_EQ(f["memory"]["partitions"], nlohmann::json({0, 127}));
  EXPECT_EQ(f["memory"]["bytes"], nlohmann::json({0, 1024}));
  EXPECT_EQ(f["message"], format_finding(r.findings[0]));

  const RaceReport clean = check_races(load("raw_missing_wait.fixed.s"), chip("trn1"));
  EXPECT_NE(format_race_report(clean).find("race-free on trn1 (DMA write barrier: "
                                           "write-after-write): 2 instructions executed"),
            std::string::npos)
      << format_race_report(clean);
  EXPECT_EQ(race_report_json(clean)["findings"].size(), 0u);
}

}  // namespace
}  // namespace trnsim::core
