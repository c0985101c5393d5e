// Bad input, runaway programs and interrupts through the command line (issue 14): every one a
// clear message and an exit code, never an escaping exception, a crash or a silent success.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/interrupt.h"
#include "cli/run_target.h"
#include "cli_test_util.h"

namespace trnsim::cli {
namespace {

std::filesystem::path write_program(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "trnsim_reliability_cli";
  std::filesystem::create_directories(dir);
  const auto p = dir / name;
  std::ofstream(p) << text;
  return p;
}

constexpr const char* kTwoQueues = R"(.chip trn2
.semaphores 1
.tensor A hbm bf16 [128, 512] input
.tensor B hbm bf16 [128, 512] input
.engine sp
  dma_copy sbuf[0:128] [[1,512]] bf16 <- A[0:128] [[1,512]] queue=0
  dma_copy sbuf[0:128] [[1,512]] bf16 <- B[0:128] [[1,512]] queue=QUEUE
)";

std::string with_queue(const std::string& q) {
  std::string s = kTwoQueues;
  s.replace(s.find("QUEUE"), 5, q);
  return s;
}

// `run` applies the rules `check` applies: a bad DMA queue is an error naming file and line
// (it was a segfault), in every mode.
TEST(ReliabilityCli, RunValidatesProgramsLikeCheck) {
  const auto p = write_program("bad_queue.s", with_queue("-1"));
  for (const char* mode : {"functional+timing", "timing", "functional"}) {
    const CliResult r = run_cli({"run", p.string(), "--mode", mode});
    EXPECT_EQ(r.code, kExitBadInput) << mode << r.out;
    EXPECT_TRUE(has(r.err, "bad_queue.s:7")) << r.err;
    EXPECT_TRUE(has(r.err, "queue=-1")) << r.err;
  }
  const CliResult c = run_cli({"check", p.string()});
  EXPECT_EQ(c.code, kExitBadInput);
}

TEST(ReliabilityCli, RunRejectsSemaphoresOutOfRange) {
  const auto p = write_program("bad_sems.s", ".chip trn2\n.semaphores -1\n.engine sp\n  nop\n");
  const CliResult r = run_cli({"run", p.string()});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_TRUE(has(r.err, "semaphores")) << r.err;
}

// Races are faults of the run (exit 1) with the checker's findings, unless told not to look.
TEST(ReliabilityCli, RunReportsRaces) {
  const auto p = write_program("race.s", with_queue("1"));
  const CliResult r = run_cli({"run", p.string()});
  EXPECT_EQ(r.code, kExitFindings) << r.err;
  EXPECT_TRUE(has(r.out, "write-after-write")) << r.out;
  const CliResult j = run_cli({"run", p.string(), "--json"});
  EXPECT_EQ(j.code, kExitFindings);
  EXPECT_FALSE(nlohmann::json::parse(j.out)["runs"][0]["races"]["findings"].empty());
  const CliResult skip = run_cli({"run", p.string(), "--no-race-check"});
  EXPECT_EQ(skip.code, kExitOk) << skip.err;
  EXPECT_FALSE(has(skip.out, "write-after-write"));
}

TEST(ReliabilityCli, RunOfADirectoryIsAnError) {
  const CliResult r = run_cli({"run", std::filesystem::temp_directory_path().string()});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_TRUE(has(r.err, "is a directory")) << r.err;
}

// An endless loop stops at the instruction budget, an endless DMA loop at the time limit, each
// as a fault naming the flag.
TEST(ReliabilityCli, RunawayProgramsStopAtTheirLimits) {
  const auto loop = write_program("loop.s", R"(.chip trn2
.engine sp
  reg_set rd=r0 imm=0
top:
  branch target=top ra=r0 op0=is_lt imm=4
)");
  for (const char* mode : {"functional+timing", "timing", "functional"}) {
    const CliResult r =
        run_cli({"run", loop.string(), "--mode", mode, "--max-instructions", "5000"});
    EXPECT_EQ(r.code, kExitFindings) << mode << r.err;
    EXPECT_TRUE(has(r.out, "step_limit")) << mode << r.out;
    EXPECT_TRUE(has(r.out, "--max-instructions")) << r.out;
  }
  const auto dma = write_program("dma_loop.s", R"(.chip trn2
.tensor A hbm fp32 [128, 256] input
.engine sp
  reg_set rd=r0 imm=0
top:
  dma_copy sbuf[0:128] [[1,256]] fp32 <- A[0:128] [[1,256]] queue=0
  branch target=top ra=r0 op0=is_lt imm=4
)");
  const CliResult r = run_cli(
      {"run", dma.string(), "--mode", "timing", "--max-sim-time", "20us", "--no-race-check"});
  EXPECT_EQ(r.code, kExitFindings) << r.err;
  EXPECT_TRUE(has(r.out, "time_limit")) << r.out;
  EXPECT_TRUE(has(r.out, "--max-sim-time")) << r.out;
}

TEST(ReliabilityCli, DurationsParseWithUnitsAndBounds) {
  EXPECT_EQ(parse_duration("60s", "--t").v, int64_t{60} * 1'000'000'000'000);
  EXPECT_EQ(parse_duration("2.5us", "--t").v, 2'500'000);
  EXPECT_EQ(parse_duration("100ps", "--t").v, 100);
  for (const char* bad : {"", "10", "10 s", "-1s", "0s", "nans", "infs", "1e30s", "5min", "s"})
    EXPECT_THROW(parse_duration(bad, "--t"), InputError) << bad;
}

// Spec values are bounded: no zero, infinite or overflowing rates and times (a 1e300 ns DMA
// overhead was an internal assertion; 0 GB/s HBM gave a 4 us kernel 18,432 s).
TEST(ReliabilityCli, SpecOverridesOutOfRangeAreBadInput) {
  for (const char* set :
       {"core.dma.fixed_overhead_ns=1e300", "chip.hbm.bandwidth_gbps=0",
        "chip.hbm.bandwidth_gbps=inf", "chip.hbm.bandwidth_gbps=nan",
        "chip.hbm.bandwidth_gbps=1e12", "core.dma.engine_bandwidth_practical_gbps=0",
        "core.tensor.clock_ghz=0", "chip.hbm.capacity_gib=0"}) {
    const CliResult r = run_cli({"run", "softmax", "256", "512", "--set", set});
    EXPECT_EQ(r.code, kExitBadInput) << set << "\n" << r.out;
    EXPECT_TRUE(has(r.err, "out of range") || has(r.err, "expected")) << set << ": " << r.err;
    EXPECT_FALSE(has(r.err, "internal error")) << r.err;
  }
}

TEST(ReliabilityCli, TensorsLargerThanHbmAreRejected) {
  const auto p = write_program("huge.s", R"(.chip trn1
.tensor A hbm fp32 [65536, 262144] input
.engine sp
  nop
)");
  const CliResult r = run_cli({"run", p.string(), "--chip", "trn1"});
  EXPECT_EQ(r.code, kExitBadInput) << r.out;
  EXPECT_TRUE(has(r.err, "does not fit")) << r.err;
  const CliResult c = run_cli({"check", p.string(), "--chip", "trn1"});
  EXPECT_EQ(c.code, kExitBadInput);
  // A kernel whose arguments ask for more HBM than the chip has stops before it builds.
  const CliResult k = run_cli({"run", "softmax", "4194304", "4096", "--chip", "trn1"});
  EXPECT_EQ(k.code, kExitBadInput) << k.out;
  EXPECT_TRUE(has(k.err, "HBM")) << k.err;
}

TEST(ReliabilityCli, CollectiveFlagsAreValidated) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"collective", "all-reduce", "--servers", "-1"},
        {"collective", "all-reduce", "--servers", "0"},
        {"collective", "all-reduce", "--intra", "bogus"},
        {"collective", "all-reduce", "--inter", "bogus"},
        {"collective", "all-reduce", "--ranks", "0"},
        {"collective", "all-reduce", "--lnc", "0"},
        {"collective", "all-reduce", "--root", "-1"},
        {"collective", "all-reduce", "--intra", "ring"},  // one server: no stages to force
        {"collective", "all-reduce", "--sizes", "18446744073709551615"},
        {"collective", "all-reduce", "--sizes", "1KiB:1GiB:nan"},
        {"collective", "all-reduce", "--sizes", "1KiB:1GiB:inf"},
        {"collective", "all-reduce", "--sizes", "9223372036854775807GiB"},
        {"collective", "all-reduce", "--sizes", "1KiB:2TiB"}}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.code, kExitBadInput) << args.back() << "\n" << r.out;
    EXPECT_FALSE(r.err.empty());
  }
  // The largest sweep ends at HI without overflowing.
  const CliResult ok = run_cli({"collective", "all-reduce", "--sizes", "512GiB:1024GiB"});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
}

TEST(ReliabilityCli, UnknownOptionsAreBadInputNotCli11Codes) {
  const CliResult r = run_cli({"run", "softmax", "--bogus"});
  EXPECT_EQ(r.code, kExitBadInput);
  EXPECT_EQ(run_cli({"--version"}).code, kExitOk);
  EXPECT_EQ(run_cli({"run", "--help"}).code, kExitOk);
}

// A pending interrupt (Ctrl-C) stops a run at its next check: "interrupted", exit 130.
TEST(ReliabilityCli, InterruptStopsARun) {
  request_interrupt();
  const CliResult r = run_cli({"run", "matmul_tiled", "--mode", "timing"});
  clear_interrupt();
  EXPECT_EQ(r.code, kExitInterrupted) << r.out;
  EXPECT_TRUE(has(r.err, "interrupted")) << r.err;
  EXPECT_EQ(run_cli({"run", "softmax", "256", "512", "--mode", "timing"}).code, kExitOk);
}

TEST(ReliabilityCli, TraceIsWrittenWholeOrNotAtAll) {
  const auto dir = std::filesystem::temp_directory_path() / "trnsim_reliability_cli";
  std::filesystem::create_directories(dir);
  const auto trace = dir / "t.json";
  std::ofstream(trace) << "previous";
  // The run fails before the trace is written: the previous file stays as it was.
  const CliResult bad = run_cli({"run", "softmax", "256", "512", "--trace", trace.string(), "--set",
                                 "chip.hbm.bandwidth_gbps=0"});
  EXPECT_EQ(bad.code, kExitBadInput);
  std::ifstream in(trace);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "previous");
  const CliResult ok = run_cli({"run", "softmax", "256", "512", "--trace", trace.string()});
  EXPECT_EQ(ok.code, kExitOk) << ok.err;
  EXPECT_TRUE(nlohmann::json::accept(std::ifstream(trace)));
  for (const auto& e : std::filesystem::directory_iterator(dir))
    EXPECT_FALSE(has(e.path().filename().string(), ".tmp-")) << e.path();
  // A directory as the trace file is an error naming the option.
  const CliResult d = run_cli({"run", "softmax", "256", "512", "--trace", dir.string()});
  EXPECT_EQ(d.code, kExitBadInput);
  EXPECT_TRUE(has(d.err, "--trace")) << d.err;
}

// A stopped sweep resumes: sizes in the journal are not simulated again, the output is the
// same as an uninterrupted sweep's, and a journal of another sweep is refused.
TEST(ReliabilityCli, CollectiveSweepResumesFromItsJournal) {
  const auto dir = std::filesystem::temp_directory_path() / "trnsim_reliability_cli";
  std::filesystem::create_directories(dir);
  const auto journal = dir / "sweep.jsonl";
  std::filesystem::remove(journal);
  const std::vector<std::string> sweep{"collective", "all-reduce", "--sizes", "1KiB:1MiB:4"};
  const CliResult whole = run_cli(sweep);
  ASSERT_EQ(whole.code, kExitOk) << whole.err;

  // The first two sizes, then a line cut short as a kill would leave it.
  std::vector<std::string> part = {"collective",  "all-reduce", "--sizes",
                                   "1KiB:4KiB:4", "--resume",   journal.string()};
  ASSERT_EQ(run_cli(part).code, kExitOk);
  std::ofstream(journal, std::ios::app) << R"({"op":"all-reduce","size_b)";
  std::vector<std::string> rest = sweep;
  rest.insert(rest.end(), {"--resume", journal.string()});
  const CliResult resumed = run_cli(rest);
  ASSERT_EQ(resumed.code, kExitOk) << resumed.err;
  EXPECT_EQ(resumed.out, whole.out);
  EXPECT_TRUE(has(resumed.err, "resumed 2 of 6 sizes")) << resumed.err;

  std::vector<std::string> other = {"collective", "all-gather", "--sizes",
                                    "1KiB",       "--resume",   journal.string()};
  const CliResult refused = run_cli(other);
  EXPECT_EQ(refused.code, kExitBadInput);
  EXPECT_TRUE(has(refused.err, "holds another sweep")) << refused.err;
}

// A file name that is not UTF-8 is echoed in the JSON manifest as U+FFFD, not an exception
// that loses the run's output (found by the fuzzing helper: check --json died on it).
TEST(ReliabilityCli, JsonOutputSurvivesNonUtf8Names) {
  const auto p = write_program("bad\xff name.s", ".chip trn2\n.engine sp\n  nop\n");
  const CliResult r = run_cli({"run", p.string(), "--json", "--mode", "timing"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out;
  const CliResult c = run_cli({"check", p.string(), "--json"});
  EXPECT_EQ(c.code, kExitOk) << c.err;
  EXPECT_TRUE(nlohmann::json::accept(c.out)) << c.out;
}

}  // namespace
}  // namespace trnsim::cli
