// The race checker on indirect DMAs: which rows of the table move is only known at run time,
// so every row counts as touched, by every piece of the transfer (race_footprint.cc).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "arch/arch.h"
#include "core/race/race_check.h"
#include "isa/assembler.h"

namespace trnsim::core {
namespace {

const arch::ChipSpec& chip(const std::string& name) {
  static std::map<std::string, arch::ChipSpec> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end()) it = loaded.emplace(name, arch::load_chip(name)).first;
  return it->second;
}

const std::string kHead =
    ".semaphores 2\n"
    ".tensor T hbm fp32 [64, 512] inout\n"
    ".tensor U hbm fp32 [64, 512] input\n";

RaceReport check(const std::string& body, const std::string& gen = "trn2") {
  return check_races(isa::assemble(kHead + body, "t.s"), chip(gen));
}

bool races_in(const RaceReport& r, FindingKind kind, const std::string& tensor) {
  for (const Finding& f : r.findings)
    if (f.kind == kind && f.range && f.range->tensor == tensor) return true;
  return false;
}

// Two plain loads of one tile on one queue are ordered by the write barrier (the same engines
// move the same partitions); two scatters on one queue are not: row r may go on any engine.
TEST(RaceIndirect, TwoScattersOnOneQueueMayRace) {
  const std::string body =
      ".engine pool\n"
      "  iota sbuf[0:128]+4096 [[1,1]] int32 signal=s0+1\n"
      "  dma_scatter T[0:64] [[1,512]] <- sbuf[0:128] [[1,512]] fp32, sbuf[0:128]+4096 [[1,1]] "
      "int32 queue=0 wait=s0>=1\n"
      "  dma_scatter T[0:64] [[1,512]] <- sbuf[0:128]+2048 [[1,512]] fp32, sbuf[0:128]+4096 "
      "[[1,1]] int32 queue=0\n";
  for (const char* g : {"trn1", "trn2", "trn3"}) {
    const RaceReport r = check(body, g);
    EXPECT_TRUE(races_in(r, FindingKind::kWriteAfterWrite, "T")) << g << format_race_report(r);
  }
}

// A gather reads every row: a store into any row of the table races with it unless ordered.
TEST(RaceIndirect, AGatherReadsTheWholeTable) {
  const std::string store =
      ".engine sp\n"
      "  dma_copy T[0:1]+2560 [[1,512]] <- sbuf[0:1]+8192 [[1,512]] fp32 queue=0 {}\n";
  const std::string gather =
      ".engine pool\n"
      "  iota sbuf[0:128]+4096 [[1,1]] int32 signal=s0+1\n"
      "  dma_gather sbuf[0:128] [[1,512]] fp32 <- T[0:64] [[1,512]], sbuf[0:128]+4096 [[1,1]] "
      "int32 queue=0 wait=s0>=1 {}\n";
  const auto fill = [](std::string s, const std::string& what) {
    return s.replace(s.find("{}"), 2, what);
  };
  const RaceReport open = check(fill(store, "") + fill(gather, ""));
  EXPECT_TRUE(races_in(open, FindingKind::kReadAfterWrite, "T") ||
              races_in(open, FindingKind::kWriteAfterRead, "T"))
      << format_race_report(open);
  const RaceReport ordered = check(fill(store, "signal=s1+1") + fill(gather, "wait=s1>=1"));
  EXPECT_TRUE(ordered.clean()) << format_race_report(ordered);
  // Another tensor is untouched.
  const RaceReport other =
      check(".engine sp\n  dma_copy U[0:1] [[1,512]] <- sbuf[0:1]+8192 [[1,512]] fp32 queue=0\n" +
            fill(gather, ""));
  EXPECT_FALSE(races_in(other, FindingKind::kReadAfterWrite, "U")) << format_race_report(other);
}

// The offsets are read by the DMA: an engine's write of them must be ordered before it.
TEST(RaceIndirect, TheOffsetsAreReadByTheTransfer) {
  const RaceReport r = check(
      ".engine pool\n"
      "  iota sbuf[0:128]+4096 [[1,1]] int32\n"
      "  dma_gather sbuf[0:128] [[1,512]] fp32 <- U[0:64] [[1,512]], sbuf[0:128]+4096 [[1,1]] "
      "int32 queue=0\n");
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, FindingKind::kReadAfterWrite);
  ASSERT_TRUE(r.findings[0].range);
  EXPECT_EQ(r.findings[0].range->space, isa::Space::kSbuf);
  EXPECT_EQ(r.findings[0].range->byte_begin, 4096);
}

}  // namespace
}  // namespace trnsim::core
