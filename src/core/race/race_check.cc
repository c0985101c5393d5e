#include "core/race/race_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/cost/cost.h"
#include "core/race/race_footprint.h"
#include "core/race/race_order.h"
#include "isa/disassembler.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {

// One finding per pair of instructions (as written, loops folded), kind and memory.
struct RaceKey {
  isa::Engine first_stream, second_stream;
  int32_t first_index, second_index;
  FindingKind kind;
  isa::Space space;
  std::string tensor;
  bool operator<(const RaceKey& o) const {
    return std::tie(first_stream, first_index, second_stream, second_index, kind, space, tensor) <
           std::tie(o.first_stream, o.first_index, o.second_stream, o.second_index, o.kind, o.space,
                    o.tensor);
  }
};

struct RaceFound {
  uint32_t first = 0, second = 0;  // the earliest executions that race
  MemRange range;
  std::set<std::pair<uint32_t, uint32_t>> executions;
};

class Checker {
 public:
  Checker(const isa::Program& prog, const arch::ChipSpec& chip, const RaceCheckOptions& opts)
      : prog_(prog), chip_(chip), opts_(opts), hb_(prog, chip.core, opts.max_instructions) {}

  RaceReport run();

 private:
  InstrRef ref(int64_t node) const;
  RaceReport& too_big(std::string detail, int64_t node = -1);
  bool collect_footprints();
  const std::vector<ByteRect>& exact(uint32_t node) const;
  bool issues_first(uint32_t a, uint32_t b) const;
  void check_pair(const ByteRect& a, const ByteRect& b);
  void check_rings(const ByteRect& f, const ByteRect& s, FindingKind kind);
  void record(const ByteRect& f, const ByteRect& s, FindingKind kind, const ByteRect& overlap);

  // An instruction's bytes as written: with the DMA rings, and merged without them.
  struct Footprint {
    std::vector<ByteRect> exact, merged;
  };
  struct NodeInfo {
    isa::Engine stream;
    bool dma;
  };

  const isa::Program& prog_;
  const arch::ChipSpec& chip_;
  const RaceCheckOptions& opts_;
  HappensBefore hb_;
  RaceReport rep_;
  std::array<std::vector<std::optional<Footprint>>, isa::kNumEngines> footprints_;
  std::vector<NodeInfo> info_;  // per node, for the sweep's inner loop
  std::vector<ByteRect> rects_;
  size_t pairs_ = 0;  // conflicting access pairs of different agents
  std::map<RaceKey, RaceFound> races_;
  DmaWriteOrder barrier_;
};

InstrRef Checker::ref(int64_t node) const {
  if (node < 0) return {};
  const ExecNode& n = hb_.nodes()[static_cast<size_t>(node)];
  const isa::Instruction& in = hb_.instruction(static_cast<size_t>(node));
  return {n.stream,
          n.index,
          n.occurrence,
          in.source_line,
          in.origin.file >= 0 ? isa::source_of(prog_, in) : std::string(),
          hb_.agent(n.agent).label(),
          isa::format_instruction(in, prog_)};
}

RaceReport& Checker::too_big(std::string detail, int64_t node) {
  rep_.checked = false;
  rep_.findings = {{FindingKind::kTooBig, ref(node), {}, {}, -1, 1, std::move(detail)}};
  return rep_;
}

bool Checker::collect_footprints() {
  // Each instruction as written once; its executions share the rectangles.
  for (isa::Engine e : isa::kAllEngines)
    footprints_[static_cast<size_t>(e)].resize(prog_.stream(e).size());
  for (size_t n = 0; n < hb_.nodes().size(); ++n) {
    const ExecNode& node = hb_.nodes()[n];
    const isa::Instruction& in = hb_.instruction(n);
    info_.push_back({node.stream, isa::is_dma(in.op)});
    auto& slot = footprints_[static_cast<size_t>(node.stream)][static_cast<size_t>(node.index)];
    if (!slot) {
      slot.emplace();
      if (!footprint(in, chip_.core, opts_.max_operand_elements, slot->exact)) {
        too_big(fmt::format("an operand names more than {} elements (or byte runs) per partition",
                            opts_.max_operand_elements),
                static_cast<int64_t>(n));
        return false;
      }
      slot->merged = without_rings(slot->exact);
    }
    for (ByteRect r : slot->merged) {
      r.node = static_cast<uint32_t>(n);
      rects_.push_back(r);
    }
  }
  return true;
}

const std::vector<ByteRect>& Checker::exact(uint32_t node) const {
  const ExecNode& n = hb_.nodes()[node];
  return footprints_[static_cast<size_t>(n.stream)][static_cast<size_t>(n.index)]->exact;
}

// Which of two unordered instructions a finding names first: the one that issues first when
// the order knows it, else the one written first.
bool Checker::issues_first(uint32_t a, uint32_t b) const {
  if (hb_.issues_before(a, b)) return true;
  if (hb_.issues_before(b, a)) return false;
  const int32_t la = hb_.instruction(a).source_line, lb = hb_.instruction(b).source_line;
  if (la > 0 && lb > 0 && la != lb) return la < lb;
  const ExecNode &x = hb_.nodes()[a], &y = hb_.nodes()[b];
  return std::tie(x.stream, x.index, x.occurrence) < std::tie(y.stream, y.index, y.occurrence);
}

ByteRect intersect(const ByteRect& a, const ByteRect& b) {
  ByteRect r = a;
  r.part_first = std::max(a.part_first, b.part_first);
  r.part_last = std::min(a.part_last, b.part_last);
  r.lo = std::max(a.lo, b.lo);
  r.hi = std::min(a.hi, b.hi);
  return r;
}

bool is_empty(const ByteRect& r) { return r.lo >= r.hi || r.part_first > r.part_last; }

void Checker::check_pair(const ByteRect& a, const ByteRect& b) {
  if (a.node == b.node || !(a.write || b.write) || b.part_first > a.part_last ||
      a.part_first > b.part_last)
    return;
  const NodeInfo &x = info_[a.node], &y = info_[b.node];
  if (!x.dma && !y.dma && x.stream == y.stream) return;  // an engine keeps its own order
  ++pairs_;
  if (hb_.completes_before_issue(a.node, b.node) || hb_.completes_before_issue(b.node, a.node))
    return;
  const bool a_first = issues_first(a.node, b.node);
  const ByteRect &f = a_first ? a : b, &s = a_first ? b : a;
  const FindingKind kind = f.write && s.write ? FindingKind::kWriteAfterWrite
                           : f.write          ? FindingKind::kReadAfterWrite
                                              : FindingKind::kWriteAfterRead;
  if (x.dma && y.dma && x.stream == y.stream && barrier_.orders(kind))
    check_rings(f, s, kind);
  else
    record(f, s, kind, intersect(a, b));
}

// Two transfers from one stream whose conflict the generation's write barrier orders where
// both move the bytes on one ring: what their pieces on different rings share still races.
void Checker::check_rings(const ByteRect& f, const ByteRect& s, FindingKind kind) {
  const ByteRect shared = intersect(f, s);
  for (const ByteRect& fr : exact(f.node)) {
    if (fr.space != f.space || fr.write != f.write || is_empty(intersect(fr, shared))) continue;
    for (const ByteRect& sr : exact(s.node)) {
      if (sr.space != s.space || sr.write != s.write || sr.ring == fr.ring) continue;
      const ByteRect open = intersect(intersect(fr, sr), shared);
      if (!is_empty(open)) record(f, s, kind, open);
    }
  }
}

void Checker::record(const ByteRect& f, const ByteRect& s, FindingKind kind,
                     const ByteRect& overlap) {
  MemRange m{overlap.space, "", overlap.part_first, overlap.part_last, overlap.lo, overlap.hi};
  if (m.space == isa::Space::kHbm)
    if (const isa::HbmTensor* t = prog_.tensor_at(m.byte_begin)) {
      m.tensor = t->name;
      m.tensor_address = t->address;
    }
  const ExecNode &fn = hb_.nodes()[f.node], &sn = hb_.nodes()[s.node];
  const RaceKey key{fn.stream, sn.stream, fn.index, sn.index, kind, m.space, m.tensor};
  auto [it, fresh] = races_.try_emplace(key, RaceFound{f.node, s.node, m, {}});
  RaceFound& r = it->second;
  r.executions.insert({f.node, s.node});
  if (fresh) return;
  if (std::tie(fn.occurrence, sn.occurrence) <
      std::tie(hb_.nodes()[r.first].occurrence, hb_.nodes()[r.second].occurrence)) {
    r.first = f.node;
    r.second = s.node;
  }
  r.range.partition_first = std::min(r.range.partition_first, m.partition_first);
  r.range.partition_last = std::max(r.range.partition_last, m.partition_last);
  r.range.byte_begin = std::min(r.range.byte_begin, m.byte_begin);
  r.range.byte_end = std::max(r.range.byte_end, m.byte_end);
}

RaceReport Checker::run() {
  rep_.chip = chip_.meta.name;
  rep_.dma_write_barrier = chip_.core.dma.write_barrier;
  barrier_ = dma_write_order(chip_.core.dma);
  rep_.instructions = hb_.executed();
  if (hb_.data_dependent())
    return too_big(
        "a branch depends on a value a reg_load reads from memory: the order of execution is "
        "data, which a check from the program alone cannot unroll");
  if (hb_.too_big())
    return too_big(
        fmt::format("more than {} instructions execute (loops unrolled); the "
                    "check keeps a vector clock per instruction",
                    opts_.max_instructions));
  if (!collect_footprints()) return rep_;
  bool hangs = false;
  for (const SyncProblem& p : hb_.resolve()) {
    rep_.findings.push_back({p.kind, ref(p.first), ref(p.second), {}, p.semaphore, 1, p.detail});
    hangs |= p.kind == FindingKind::kDeadlock || p.kind == FindingKind::kUnsatisfiableWait;
  }
  if (hangs) return rep_;  // what never runs cannot race; the order is not complete either

  std::sort(rects_.begin(), rects_.end(), [](const ByteRect& a, const ByteRect& b) {
    return std::tie(a.space, a.lo, a.hi, a.node) < std::tie(b.space, b.lo, b.hi, b.node);
  });
  for (size_t i = 0; i < rects_.size(); ++i)
    for (size_t j = i + 1;
         j < rects_.size() && rects_[j].space == rects_[i].space && rects_[j].lo < rects_[i].hi;
         ++j)
      check_pair(rects_[i], rects_[j]);
  rep_.conflicting_pairs = pairs_;
  for (const auto& [key, r] : races_)
    rep_.findings.push_back({key.kind, ref(r.first), ref(r.second), r.range, -1,
                             static_cast<int64_t>(r.executions.size()), ""});
  return rep_;
}

}  // namespace

RaceReport check_races(const isa::Program& prog, const arch::ChipSpec& chip,
                       const RaceCheckOptions& opts) {
  return Checker(prog, chip, opts).run();
}

}  // namespace trnsim::core
