// The race checker: from a Program alone (it shares no code with the kernel API's dependency
// tracking, kernel/sync_resolver.h, so it checks that code independently), the happens-before
// order the semaphores imply, every pair of conflicting accesses by different agents that the
// order leaves open, and every wait that can never hold. Model (docs/race_check.md):
//   - a stream issues in order; an instruction issues once its waits hold; control flow
//     (reg_set, reg_alu, branch) depends only on the stream's own registers, so loops are
//     unrolled exactly (core/control/control_flow.h);
//   - an instruction's accesses happen between its issue and its completion;
//   - agents complete in order: each engine for its own instructions (two of them never race),
//     TensorE's load_stationary unit (core/cost/cost.h: the background unit), and each DMA queue
//     agent (trigger stream, dma_queue, partitions of the split side: transfers with one key
//     use the same DMA engines in the same order, core/dma/dma_plan.h);
//   - `semaphore s >= v` holds only after enough signals of s have completed: with one
//     signalling agent after the first of its signals whose running sum reaches v; with several
//     (all adding), after agent A's signal that brings A alone to v minus what the others can
//     add at most;
//   - DMA transfers from one stream that reach the same DMA engine and queue (a ring) are
//     ordered by the generation's write barrier (spec core.dma.write_barrier, race_order.h).
// Two accesses conflict when they touch a common byte and one of them writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "arch/chip_spec.h"
#include "isa/engine.h"
#include "isa/names.h"
#include "isa/program.h"

namespace trnsim::core {

enum class FindingKind : uint8_t {
  kReadAfterWrite,      // the second reads bytes the first writes, unordered
  kWriteAfterRead,      // the second writes bytes the first reads, unordered
  kWriteAfterWrite,     // both write the same bytes, unordered
  kDeadlock,            // semaphore waits that wait for each other (a cycle)
  kUnsatisfiableWait,   // a wait for more than the semaphore's signals ever add
  kMultipleSignallers,  // a semaphore that goes down, signalled by several agents: order unknown
  kTooBig,              // not checked: over the size limit, or its control flow is data
};
inline constexpr isa::NameTable<FindingKind, 7> kFindingKindNames{{{
    {FindingKind::kReadAfterWrite, "read-after-write"},
    {FindingKind::kWriteAfterRead, "write-after-read"},
    {FindingKind::kWriteAfterWrite, "write-after-write"},
    {FindingKind::kDeadlock, "deadlock"},
    {FindingKind::kUnsatisfiableWait, "unsatisfiable-wait"},
    {FindingKind::kMultipleSignallers, "multiple-signallers"},
    {FindingKind::kTooBig, "too-big"},
}}};

// One instruction of a finding, as the program states it.
struct InstrRef {
  isa::Engine stream = isa::Engine::kSync;
  int32_t index = -1;       // in its stream; -1: no instruction
  int64_t occurrence = 0;   // which execution of it (loops): 0 is the first
  int32_t source_line = 0;  // 0 when not from text
  std::string source;       // "kernel.py:27" where the file is known (isa::source_of), else ""
  std::string agent;        // "dve", "pe-background", "dma queue 3 from sp for partitions 0-127"
  std::string text;         // the instruction as the disassembler writes it
  bool valid() const { return index >= 0; }
};

// The bytes two accesses share (their bounding box when they share several runs).
struct MemRange {
  isa::Space space = isa::Space::kSbuf;
  std::string tensor;           // HBM: the declared tensor holding byte_begin ("" if none)
  int32_t partition_first = 0;  // SBUF/PSUM: partitions first..last; HBM: 0
  int32_t partition_last = 0;
  int64_t byte_begin = 0;  // [begin, end): within each partition, or device address
  int64_t byte_end = 0;
  int64_t tensor_address = 0;  // HBM: the tensor's base address
};

struct Finding {
  FindingKind kind = FindingKind::kTooBig;
  InstrRef first, second;         // races: the one that issues first when known (else text order)
  std::optional<MemRange> range;  // races
  int32_t semaphore = -1;         // sync findings
  int64_t count = 1;              // executions of this pair (loops) that race
  std::string detail;             // what the kind alone does not say
};

struct RaceReport {
  std::string chip;
  std::string dma_write_barrier;  // the generation's rule the DMA ordering used
  bool checked = true;            // false: too big (one kTooBig finding says why)
  size_t instructions = 0;        // executed instructions (loops unrolled)
  size_t conflicting_pairs = 0;   // access pairs of different agents, common bytes, a write
  std::vector<Finding> findings;  // deterministic order; empty: race-free and deadlock-free

  bool clean() const { return checked && findings.empty(); }
};

struct RaceCheckOptions {
  // Executed instructions checked at most: the order has one vector clock per instruction.
  size_t max_instructions = 12000;
  // Elements one operand may name per partition (a stride-0 pattern can name billions).
  int64_t max_operand_elements = int64_t{1} << 24;
};

// Never throws for a program the assembler accepts; a program over the limits comes back
// unchecked with one kTooBig finding. A program that can hang (kDeadlock, kUnsatisfiableWait)
// is reported for that alone: races are only looked for in programs that finish.
RaceReport check_races(const isa::Program& prog, const arch::ChipSpec& chip,
                       const RaceCheckOptions& opts = {});

// One line per finding, then a summary line.
std::string format_race_report(const RaceReport& r);
// One finding as a line (no newline), as format_race_report writes it.
std::string format_finding(const Finding& f);
nlohmann::json race_report_json(const RaceReport& r);

}  // namespace trnsim::core
