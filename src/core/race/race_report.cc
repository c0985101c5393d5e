// The race checker's report as text (one finding per line) and as JSON.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "core/race/race_check.h"

namespace trnsim::core {

namespace {

// "sp[0] (line 8, dma queue 0 from sp (partitions 0-127)) `dma_copy ...`"
std::string ref_text(const InstrRef& r) {
  std::vector<std::string> notes;
  if (r.occurrence > 0) notes.push_back(fmt::format("execution {}", r.occurrence + 1));
  if (!r.source.empty())  // "kernel.py:27": the file's name, its directories are in the JSON
    notes.push_back(std::filesystem::path(r.source).filename().string());
  else if (r.source_line > 0)
    notes.push_back(fmt::format("line {}", r.source_line));
  if (r.agent != isa::engine_name(r.stream)) notes.push_back(r.agent);
  return fmt::format("{}[{}]{} `{}`", isa::engine_name(r.stream), r.index,
                     notes.empty() ? "" : fmt::format(" ({})", fmt::join(notes, ", ")), r.text);
}

// Byte ranges print inclusive: "bytes 0-1023".
std::string range_text(const MemRange& m) {
  if (m.space != isa::Space::kHbm)
    return fmt::format("{} partitions {}-{} bytes {}-{}", isa::space_name(m.space),
                       m.partition_first, m.partition_last, m.byte_begin, m.byte_end - 1);
  const std::string address = fmt::format("address 0x{:x}-0x{:x}", m.byte_begin, m.byte_end - 1);
  if (m.tensor.empty()) return "hbm " + address;
  return fmt::format("hbm tensor {} bytes {}-{} ({})", m.tensor, m.byte_begin - m.tensor_address,
                     m.byte_end - 1 - m.tensor_address, address);
}

nlohmann::json ref_json(const InstrRef& r) {
  if (!r.valid()) return nullptr;
  return {{"stream", std::string(isa::engine_name(r.stream))},
          {"index", r.index},
          {"occurrence", r.occurrence},
          {"line", r.source_line},
          {"source", r.source},
          {"agent", r.agent},
          {"text", r.text}};
}

nlohmann::json range_json(const MemRange& m) {
  nlohmann::json j{{"space", std::string(isa::space_name(m.space))},
                   {"partitions", {m.partition_first, m.partition_last}},
                   {"bytes", {m.byte_begin, m.byte_end}}};
  if (m.space == isa::Space::kHbm) {
    j["tensor"] = m.tensor;
    j["tensor_bytes"] = {m.byte_begin - m.tensor_address, m.byte_end - m.tensor_address};
  }
  return j;
}

}  // namespace

std::string format_finding(const Finding& f) {
  const std::string_view kind = kFindingKindNames.name(f.kind);
  switch (f.kind) {
    case FindingKind::kReadAfterWrite:
    case FindingKind::kWriteAfterRead:
    case FindingKind::kWriteAfterWrite:
      return fmt::format("{}: {} and {} are not ordered; both touch {}{}", kind, ref_text(f.first),
                         ref_text(f.second), f.range ? range_text(*f.range) : "?",
                         f.count > 1 ? fmt::format(" ({} executions)", f.count) : "");
    case FindingKind::kDeadlock:
      return fmt::format("{}: {} waits on s{}, which {} signals; {}", kind, ref_text(f.first),
                         f.semaphore, ref_text(f.second), f.detail);
    case FindingKind::kMultipleSignallers:
      return fmt::format("{}: {} and {} both signal s{}; {}", kind, ref_text(f.first),
                         ref_text(f.second), f.semaphore, f.detail);
    case FindingKind::kUnsatisfiableWait:
    case FindingKind::kTooBig:
      break;
  }
  return fmt::format("{}: {}{}", kind, f.first.valid() ? ref_text(f.first) + ": " : "", f.detail);
}

std::string format_race_report(const RaceReport& r) {
  std::string s;
  for (const Finding& f : r.findings) s += format_finding(f) + "\n";
  const std::string on = fmt::format("on {} (DMA write barrier: {})", r.chip.empty() ? "?" : r.chip,
                                     r.dma_write_barrier);
  if (!r.checked) return s + fmt::format("not checked {}: too big\n", on);
  const auto plural = [](size_t n, std::string_view what) {
    return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s");
  };
  const std::string counts = fmt::format("{} executed, {}", plural(r.instructions, "instruction"),
                                         plural(r.conflicting_pairs, "conflicting access pair"));
  if (r.findings.empty()) return s + fmt::format("race-free {}: {}, all ordered\n", on, counts);
  return s + fmt::format("{} {}: {}\n", plural(r.findings.size(), "finding"), on, counts);
}

nlohmann::json race_report_json(const RaceReport& r) {
  nlohmann::json findings = nlohmann::json::array();
  for (const Finding& f : r.findings)
    findings.push_back({{"kind", std::string(kFindingKindNames.name(f.kind))},
                        {"message", format_finding(f)},
                        {"first", ref_json(f.first)},
                        {"second", ref_json(f.second)},
                        {"memory", f.range ? range_json(*f.range) : nlohmann::json(nullptr)},
                        {"semaphore", f.semaphore >= 0 ? nlohmann::json(f.semaphore) : nullptr},
                        {"count", f.count},
                        {"detail", f.detail}});
  return {{"chip", r.chip},
          {"dma_write_barrier", r.dma_write_barrier},
          {"checked", r.checked},
          {"race_free", r.clean()},
          {"instructions", r.instructions},
          {"conflicting_pairs", r.conflicting_pairs},
          {"findings", std::move(findings)}};
}

}  // namespace trnsim::core
