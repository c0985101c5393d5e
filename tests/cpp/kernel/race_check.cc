#include "race_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "isa/op_table.h"

namespace trnsim::kernel_test {

namespace {

using isa::AccessPattern;
using isa::Instruction;

bool is_dma(const Instruction& in) {
  return in.op == isa::Opcode::kDmaCopy || in.op == isa::Opcode::kDmaTranspose;
}

// Agent of an instruction: "pe", "pe-background", or "dma:<stream>:<queue>:<start>:<rows>".
std::string agent_of(const Instruction& in) {
  if (in.op == isa::Opcode::kLoadStationary) return "pe-background";
  if (!is_dma(in)) return std::string(isa::engine_name(in.engine));
  const AccessPattern &d = in.operands[0], &s = in.operands[1];
  const AccessPattern& split = d.space != isa::Space::kHbm   ? d
                               : s.space != isa::Space::kHbm ? s
                                                             : d;
  const int start = split.space == isa::Space::kHbm ? 0 : split.start_partition;
  return fmt::format("dma:{}:{}:{}:{}", isa::engine_name(in.engine), in.p.dma_queue, start,
                     split.num_partitions);
}

// Bytes touched, exactly: per (space, partition) on chip, per HBM row address otherwise.
struct Interval {
  int space = 0;
  int64_t partition = 0;  // -1 in HBM (absolute addresses)
  int64_t lo = 0, hi = 0;
  size_t node = 0;  // instruction number
  bool write = false;
};

void intervals(const AccessPattern& ap, size_t node, bool write, std::vector<Interval>& out) {
  const int64_t es = ap.dtype.storage_bytes;
  std::vector<int64_t> offsets{0};  // element offsets of the free pattern
  for (int d = 0; d < ap.ndim; ++d) {
    std::vector<int64_t> next;
    for (int64_t o : offsets)
      for (int64_t i = 0; i < ap.dims[d].size; ++i) next.push_back(o + i * ap.dims[d].stride);
    offsets.swap(next);
  }
  std::sort(offsets.begin(), offsets.end());
  const bool hbm = ap.space == isa::Space::kHbm;
  for (int64_t p = 0; p < ap.num_partitions; ++p) {
    const int64_t base = hbm ? ap.offset + p * ap.partition_stride * es : ap.offset;
    const int64_t part = hbm ? -1 : ap.start_partition + p;
    for (int64_t o : offsets) {
      const int64_t lo = base + o * es;
      if (!out.empty() && out.back().node == node && out.back().partition == part &&
          out.back().space == static_cast<int>(ap.space) && out.back().hi == lo &&
          out.back().write == write)
        out.back().hi = lo + es;
      else
        out.push_back({static_cast<int>(ap.space), part, lo, lo + es, node, write});
    }
  }
}

}  // namespace

RaceReport check_races(const isa::Program& prog, size_t max_instructions) {
  RaceReport rep;
  struct Node {
    isa::Engine e;
    size_t index;
  };
  std::vector<Node> nodes;  // instruction n: issue node 2n, completion node 2n+1
  std::array<std::vector<size_t>, isa::kNumEngines> id{};
  for (isa::Engine e : isa::kAllEngines)
    for (size_t i = 0; i < prog.stream(e).size(); ++i) {
      id[static_cast<size_t>(e)].push_back(nodes.size());
      nodes.push_back({e, i});
    }
  if (nodes.size() > max_instructions) {
    rep.problems.push_back(fmt::format("{} instructions: too many to check", nodes.size()));
    return rep;
  }
  auto instr = [&](size_t n) -> const Instruction& {
    return prog.stream(nodes[n].e)[nodes[n].index];
  };
  const size_t g = 2 * nodes.size();
  std::vector<std::vector<size_t>> preds(g);
  std::map<std::string, size_t> last_of_agent;
  std::map<int, std::vector<size_t>> signallers;  // semaphore -> instructions, agent order
  std::map<int, std::string> sem_agent;
  for (isa::Engine e : isa::kAllEngines) {
    const auto& ids = id[static_cast<size_t>(e)];
    for (size_t i = 0; i < ids.size(); ++i) {
      const size_t n = ids[i];
      preds[2 * n + 1].push_back(2 * n);                  // issue before completion
      if (i > 0) preds[2 * n].push_back(2 * ids[i - 1]);  // in-order issue
      const std::string a = agent_of(instr(n));
      if (auto it = last_of_agent.find(a); it != last_of_agent.end())
        preds[2 * n + 1].push_back(2 * it->second + 1);  // in-order completion per agent
      last_of_agent[a] = n;
      for (const isa::SemSignal& s : instr(n).signals) {
        signallers[s.sem].push_back(n);
        auto [it, fresh] = sem_agent.try_emplace(s.sem, a);
        if (!fresh && it->second != a)
          rep.problems.push_back(
              fmt::format("semaphore {} is signalled by {} and {}", s.sem, it->second, a));
        if (s.delta != 1) rep.problems.push_back(fmt::format("signal of {} by {}", s.sem, s.delta));
      }
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    for (const isa::SemWait& w : instr(n).waits) {
      const auto& sig = signallers[w.sem];
      if (w.value < 1 || static_cast<size_t>(w.value) > sig.size()) {
        rep.problems.push_back(
            fmt::format("{}[{}] waits for semaphore {} >= {}; it gets {} "
                        "signals",
                        isa::engine_name(nodes[n].e), nodes[n].index, w.sem, w.value, sig.size()));
        continue;
      }
      preds[2 * n].push_back(2 * sig[static_cast<size_t>(w.value - 1)] + 1);
    }
  // Ancestor sets in topological order (Kahn); a cycle is a deadlock.
  std::vector<std::vector<size_t>> succs(g);
  std::vector<size_t> indeg(g, 0);
  for (size_t v = 0; v < g; ++v)
    for (size_t u : preds[v]) {
      succs[u].push_back(v);
      ++indeg[v];
    }
  std::vector<size_t> order;
  for (size_t v = 0; v < g; ++v)
    if (indeg[v] == 0) order.push_back(v);
  for (size_t i = 0; i < order.size(); ++i)
    for (size_t v : succs[order[i]])
      if (--indeg[v] == 0) order.push_back(v);
  if (order.size() != g) {
    rep.problems.push_back("the semaphore waits form a cycle (deadlock)");
    return rep;
  }
  const size_t words = (g + 63) / 64;
  std::vector<uint64_t> anc(g * words, 0);
  for (size_t v : order)
    for (size_t u : preds[v]) {
      for (size_t w = 0; w < words; ++w) anc[v * words + w] |= anc[u * words + w];
      anc[v * words + u / 64] |= uint64_t{1} << (u % 64);
    }
  auto before = [&](size_t x, size_t y) {  // x completes before y issues
    const size_t c = 2 * x + 1, i = 2 * y;
    return (anc[i * words + c / 64] >> (c % 64)) & 1u;
  };

  std::vector<Interval> iv;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Instruction& in = instr(n);
    for (int k = 0; k < in.num_operands; ++k) {
      const bool write = isa::operand_role(in.op, k).access == isa::Access::kWrite;
      intervals(in.operands[static_cast<size_t>(k)], n, write, iv);
    }
  }
  std::sort(iv.begin(), iv.end(), [](const Interval& a, const Interval& b) {
    return std::tie(a.space, a.partition, a.lo) < std::tie(b.space, b.partition, b.lo);
  });
  std::map<std::pair<size_t, size_t>, bool> seen;
  for (size_t i = 0; i < iv.size(); ++i)
    for (size_t j = i + 1; j < iv.size() && iv[j].space == iv[i].space &&
                           iv[j].partition == iv[i].partition && iv[j].lo < iv[i].hi;
         ++j) {
      const Interval &a = iv[i], &b = iv[j];
      if (a.node == b.node || !(a.write || b.write)) continue;
      const Instruction &x = instr(a.node), &y = instr(b.node);
      if (!is_dma(x) && !is_dma(y) && x.engine == y.engine) continue;  // one engine: ordered
      const auto key = std::minmax(a.node, b.node);
      if (seen.count(key)) continue;
      seen[key] = true;
      ++rep.conflicting_pairs;
      if (!before(a.node, b.node) && !before(b.node, a.node))
        rep.problems.push_back(fmt::format(
            "race: {}[{}] {} and {}[{}] {} touch the same bytes "
            "unordered",
            isa::engine_name(nodes[a.node].e), nodes[a.node].index, isa::mnemonic(x.op),
            isa::engine_name(nodes[b.node].e), nodes[b.node].index, isa::mnemonic(y.op)));
    }
  return rep;
}

}  // namespace trnsim::kernel_test
