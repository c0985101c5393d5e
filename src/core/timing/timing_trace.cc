#include "core/timing/timing_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/exec/operand_roles.h"
#include "isa/access_rules.h"
#include "isa/op_table.h"

namespace trnsim::core {

namespace {

// Counters are sampled on windows of about a thousandth of the run (1, 2 or 5 x 10^k ps, at
// least 1 ns), so that their size does not grow with the run's instruction count.
constexpr int64_t kWindowsPerRun = 1000;
// A step function with at most this many changes is recorded change by change.
constexpr size_t kMaxExactChanges = 4096;

Picoseconds counter_window(Picoseconds run) {
  const int64_t want = std::max<int64_t>(run.v / kWindowsPerRun, 1000);
  for (int64_t scale = 1;; scale *= 10)
    for (int64_t m : {1, 2, 5})
      if (m * scale >= want) return Picoseconds(m * scale);
}

// Records a step function given as (time, change) pairs: every change when there are few,
// else each window's highest value, at the window's start, when it differs from the last.
void record_steps(profile::Trace& trace, uint32_t counter,
                  std::vector<std::pair<Picoseconds, double>> changes, Picoseconds window) {
  std::stable_sort(changes.begin(), changes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<Picoseconds, double>> steps;  // value from each time on
  double v = 0;
  for (size_t i = 0; i < changes.size(); ++i) {
    v += changes[i].second;
    if (i + 1 < changes.size() && changes[i + 1].first == changes[i].first) continue;
    if (steps.empty() || steps.back().second != v) steps.emplace_back(changes[i].first, v);
  }
  if (steps.size() <= kMaxExactChanges) {
    for (const auto& [t, x] : steps) trace.record_counter(counter, t, x);
    return;
  }
  double last = 0, carried = 0;
  bool any = false;
  for (size_t i = 0; i < steps.size();) {
    const int64_t w = steps[i].first.v / window.v;
    double peak = carried;
    for (; i < steps.size() && steps[i].first.v / window.v == w; ++i) {
      peak = std::max(peak, steps[i].second);
      carried = steps[i].second;
    }
    if (!any || peak != last) trace.record_counter(counter, Picoseconds(w * window.v), peak);
    any = true;
    last = peak;
    // The next window starts at the value this one ended with.
    if (i < steps.size() && steps[i].first.v / window.v > w + 1 && carried != last) {
      trace.record_counter(counter, Picoseconds((w + 1) * window.v), carried);
      last = carried;
    }
  }
}

// Bytes of one on-chip memory in use over time, from the operands of the instructions and
// transfers that ran: bytes are in use from the access that writes them to the last one that
// reads them before they are written again (a new tile in the same place); bytes read that
// the run never wrote count from that read. Offsets within a partition are exact; partitions
// are the range the accesses to those offsets covered (a tile is [P, bytes]).
class Liveness {
 public:
  void access(int64_t lo, int64_t hi, int p0, int p1, bool write, Picoseconds s, Picoseconds e) {
    if (hi <= lo) return;
    split(lo);
    split(hi);
    int64_t at = lo;
    auto it = segs_.lower_bound(lo);
    while (at < hi) {
      if (it == segs_.end() || it->first > at) {
        const int64_t gap = it == segs_.end() ? hi : std::min(hi, it->first);
        Seg fresh;
        fresh.end = gap;
        it = segs_.emplace_hint(it, at, fresh);
      }
      Seg& g = it->second;
      if (write && g.live && g.read) close(it->first, g);
      if (!g.live) {
        g.live = true;
        g.read = false;
        g.p0 = p0;
        g.p1 = p1;
        g.from = s;
        g.to = e;
      } else {
        g.p0 = std::min(g.p0, p0);
        g.p1 = std::max(g.p1, p1);
        g.to = std::max(g.to, e);
      }
      g.read = g.read || !write;
      at = g.end;
      ++it;
    }
  }
  std::vector<std::pair<Picoseconds, double>> changes() {
    for (auto& [start, g] : segs_)
      if (g.live) close(start, g);
    return std::move(changes_);
  }

 private:
  struct Seg {
    int64_t end = 0;
    bool live = false, read = false;
    int p0 = 0, p1 = 0;
    Picoseconds from, to;
  };
  void split(int64_t at) {
    auto it = segs_.upper_bound(at);
    if (it == segs_.begin()) return;
    --it;
    if (it->first < at && at < it->second.end) {
      Seg tail = it->second;
      it->second.end = at;
      segs_.emplace_hint(std::next(it), at, tail);
    }
  }
  void close(int64_t start, Seg& g) {
    const double bytes = static_cast<double>(g.end - start) * (g.p1 - g.p0);
    changes_.emplace_back(g.from, bytes);
    changes_.emplace_back(std::max(g.to, g.from), -bytes);
    g.live = false;
  }
  std::map<int64_t, Seg> segs_;  // by first offset; only offsets accessed
  std::vector<std::pair<Picoseconds, double>> changes_;
};

}  // namespace

std::string describe_operand(const isa::AccessPattern& ap) {
  std::string s;
  if (ap.space == isa::Space::kHbm) {
    s = fmt::format("hbm@{:#x} rows={}", ap.offset, ap.num_partitions);
  } else {
    s = fmt::format("{}[{}:{}]+{:#x}", isa::space_name(ap.space), ap.start_partition,
                    ap.start_partition + ap.num_partitions, ap.offset);
  }
  s += ' ' + ap.dtype.name() + " [";
  for (int d = 0; d < ap.ndim; ++d) {
    if (d) s += 'x';
    s += std::to_string(ap.dims[d].size);
    if (ap.dims[d].stride != 1) s += fmt::format("/{}", ap.dims[d].stride);
  }
  return s + ']';
}

profile::Label instruction_label_for_trace(const isa::Program& prog, const isa::Instruction& ins,
                                           const InstrInfo& info, size_t index) {
  profile::Label l;
  const std::string_view mn = isa::mnemonic(ins.op);
  l.name = ins.name.empty() ? std::string(mn) : fmt::format("{} '{}'", mn, ins.name);
  l.category = std::string(isa::engine_name(ins.engine));
  l.args.emplace_back("opcode", std::string(mn));
  l.args.emplace_back("engine", l.category);
  l.args.emplace_back("index", std::to_string(index));
  const std::string source = isa::source_of(prog, ins);
  if (!source.empty()) l.args.emplace_back("source", source);
  std::string ops;
  for (int i = 0; i < ins.num_operands; ++i) {
    if (i) ops += "; ";
    // The tile or tensor's name where the builder knew it: "dst=xt sbuf[0:128]+0x0 ...".
    const std::string_view named = prog.symbol(ins.origin.operands[static_cast<size_t>(i)]);
    ops += fmt::format("{}={}{}{}", isa::operand_role(ins.op, i).name, named,
                       named.empty() ? "" : " ", describe_operand(ins.operands[i]));
  }
  if (!ops.empty()) l.args.emplace_back("operands", ops);
  std::string w, s;
  for (const auto& x : ins.waits)
    w += fmt::format("{}s{}>={}", w.empty() ? "" : " ", x.sem, x.value);
  for (const auto& x : ins.signals)
    s += fmt::format("{}s{}+={}", s.empty() ? "" : " ", x.sem, x.delta);
  if (!w.empty()) l.args.emplace_back("waits", w);
  if (!s.empty()) l.args.emplace_back("signals", s);
  l.args.emplace_back("cycles", fmt::format("ii={} latency={}", info.cost.ii, info.cost.latency));
  return l;
}

TimingTrace::TimingTrace(profile::Trace& trace, const TimingProgram& prog,
                         const arch::CoreSpec& spec, int core_index)
    : trace_(trace),
      prog_(prog),
      queues_(std::max(spec.dma.queues_per_engine, 1)),
      process_(fmt::format("core{}", core_index)),
      dma_tracks_(static_cast<size_t>(std::max(spec.dma.engines, 1) * queues_), -1) {
  for (isa::Engine e : isa::kAllEngines) {
    const auto ei = static_cast<size_t>(e);
    const uint32_t main = trace_.add_track(process_, std::string(isa::engine_name(e)));
    tracks_[ei].fill(main);
    if (e == isa::Engine::kTensor)
      tracks_[ei][static_cast<size_t>(Unit::kBackground)] =
          trace_.add_track(process_, "pe.load_stationary");
    const auto& stream = prog.stream(e);
    label_base_[ei] = static_cast<uint32_t>(trace_.labels().size());
    for (size_t i = 0; i < stream.size(); ++i)
      trace_.add_label(instruction_label_for_trace(prog.program(), stream[i], prog.info(e)[i], i));
  }
}

void TimingTrace::note_sync(const InstrInfo& info, uint64_t span, Picoseconds start,
                            Picoseconds retire) {
  for (const isa::SemWait& w : prog_.waits(info))
    waits_.push_back(SemWaitRec{span, w.value, w.sem});
  // DMA signals apply when the transfer completes (finish(), from its pieces), or at once
  // when it moves nothing; sendrecv's and core_barrier's when other cores say.
  if (isa::is_peer_transfer(info.op) || info.op == isa::Opcode::kCoreBarrier) return;
  Picoseconds at = retire;
  if (info.dma) {
    if (prog_.dma_plan(info.dma_plan).num_pieces != 0) return;
    at = start;
  }
  for (const isa::SemSignal& s : prog_.signals(info))
    signals_.push_back(SemSignalRec{at, span, s.delta, s.sem});
}

void TimingTrace::on_piece(int dma_engine, int queue, const isa::Instruction& ins,
                           isa::Engine trigger, uint64_t id, Picoseconds start, Picoseconds end) {
  int64_t& track = dma_tracks_[static_cast<size_t>(dma_engine * queues_ + queue)];
  if (track < 0)
    track = trace_.add_track(process_ + " dma", fmt::format("dma{}.q{}", dma_engine, queue));
  const auto te = static_cast<size_t>(trigger);
  const auto& stream = prog_.stream(trigger);
  const bool in_stream = &ins >= stream.data() && &ins < stream.data() + stream.size();
  const auto index = in_stream ? static_cast<uint32_t>(&ins - stream.data()) : resolved_.at(&ins);
  const uint64_t span =
      trace_.record(static_cast<uint32_t>(track), start, end, label_base_[te] + index);
  end_ = std::max(end_, end);
  if (id < issue_span_[te].size()) trace_.add_flow(issue_span_[te][id], span);
  const uint64_t key = id * isa::kNumEngines + te;
  const auto [it, fresh] = transfer_of_.try_emplace(key, static_cast<uint32_t>(transfers_.size()));
  if (fresh) {
    TransferRec t;
    t.trigger = trigger;
    t.index = index;
    t.id = id;
    transfers_.push_back(t);
  }
  TransferRec& t = transfers_[it->second];
  t.first_start = std::min(t.first_start, start);
  if (end >= t.last_end) {
    t.last_end = end;
    t.last_span = span;
  }
}

void TimingTrace::finish() {
  add_flows();
  add_counters();
}

void TimingTrace::add_flows() {
  // A transfer's signals apply when its last piece ends.
  for (const TransferRec& t : transfers_) {
    const InstrInfo& info = prog_.info(t.trigger)[t.index];
    if (isa::is_peer_transfer(info.op)) continue;
    for (const isa::SemSignal& s : prog_.signals(info))
      signals_.push_back(SemSignalRec{t.last_end, t.last_span, s.delta, s.sem});
  }
  // Per semaphore in the order the signals apply, with the counter's value after each.
  std::stable_sort(signals_.begin(), signals_.end(), [](const auto& a, const auto& b) {
    return std::tie(a.sem, a.t) < std::tie(b.sem, b.t);
  });
  std::vector<int64_t> after(signals_.size());
  for (size_t i = 0; i < signals_.size(); ++i)
    after[i] =
        signals_[i].delta + (i > 0 && signals_[i - 1].sem == signals_[i].sem ? after[i - 1] : 0);
  const bool monotone = prog_.semaphores_monotone();
  const auto& spans = trace_.spans();
  for (const SemWaitRec& w : waits_) {
    const auto lo =
        std::lower_bound(signals_.begin(), signals_.end(), w.sem,
                         [](const SemSignalRec& s, uint16_t sem) { return s.sem < sem; });
    const auto hi = std::upper_bound(
        lo, signals_.end(), w.sem, [](uint16_t sem, const SemSignalRec& s) { return sem < s.sem; });
    if (lo == hi || w.value <= 0) continue;
    const auto first = static_cast<size_t>(lo - signals_.begin());
    size_t producer = SIZE_MAX;
    if (monotone) {
      // The signal that brought the counter to the value waited for.
      const auto at = std::lower_bound(after.begin() + static_cast<std::ptrdiff_t>(first),
                                       after.begin() + (hi - signals_.begin()), w.value);
      if (at != after.begin() + (hi - signals_.begin()))
        producer = static_cast<size_t>(at - after.begin());
    } else {
      // Counters that go down: the latest signal before the wait held.
      const Picoseconds issued = spans[w.span].start;
      const auto at = std::upper_bound(
          lo, hi, issued, [](Picoseconds t, const SemSignalRec& s) { return t < s.t; });
      if (at != lo) producer = static_cast<size_t>(at - signals_.begin()) - 1;
    }
    if (producer != SIZE_MAX && signals_[producer].span != w.span)
      trace_.add_flow(signals_[producer].span, w.span);
  }
}

void TimingTrace::add_counters() {
  const Picoseconds window = counter_window(end_);
  const auto& spans = trace_.spans();
  // On-chip bytes in use: every compute instruction's and transfer's operands, in time order.
  struct Access {
    Picoseconds start, end;
    isa::Engine engine = isa::Engine::kSync;
    uint32_t index = 0;
  };
  std::vector<Access> accesses;
  for (isa::Engine e : isa::kAllEngines) {
    const auto ei = static_cast<size_t>(e);
    for (uint64_t span : issue_span_[ei]) {
      const profile::Span& s = spans[span];
      const uint32_t index = s.label - label_base_[ei];
      const InstrInfo& info = prog_.info(e)[index];
      if (!info.control && !info.dma) accesses.push_back(Access{s.start, s.end, e, index});
    }
  }
  for (const TransferRec& t : transfers_)
    accesses.push_back(Access{t.first_start, t.last_end, t.trigger, t.index});
  std::stable_sort(accesses.begin(), accesses.end(),
                   [](const Access& a, const Access& b) { return a.start < b.start; });
  Liveness sbuf, psum;
  for (const Access& a : accesses) {
    const isa::Instruction& ins = prog_.stream(a.engine)[a.index];
    const uint8_t writes = operand_roles(ins.op).write_mask;
    for (int k = 0; k < ins.num_operands; ++k) {
      const isa::AccessPattern& ap = ins.operands[k];
      if (ap.space == isa::Space::kHbm) continue;
      const isa::ByteExtent x = isa::byte_extent(ap);
      (ap.space == isa::Space::kSbuf ? sbuf : psum)
          .access(static_cast<int64_t>(x.lo), static_cast<int64_t>(x.hi), ap.start_partition,
                  ap.start_partition + ap.num_partitions, ((writes >> k) & 1u) != 0, a.start,
                  a.end);
    }
  }
  record_steps(trace_, trace_.add_counter(process_, "sbuf bytes", "bytes"), sbuf.changes(), window);
  record_steps(trace_, trace_.add_counter(process_, "psum bytes", "bytes"), psum.changes(), window);

  // DMA queues: transfers handed to the DMA engines (the trigger's issue) and not complete.
  std::map<int32_t, std::vector<std::pair<Picoseconds, double>>> depth;
  std::vector<double> hbm;  // bytes per window
  for (const TransferRec& t : transfers_) {
    const InstrInfo& info = prog_.info(t.trigger)[t.index];
    const DmaPlan& plan = prog_.dma_plan(info.dma_plan);
    auto& d = depth[plan.queue];
    const auto& issued = issue_span_[static_cast<size_t>(t.trigger)];
    d.emplace_back(t.id < issued.size() ? spans[issued[t.id]].start : t.first_start, 1.0);
    d.emplace_back(t.last_end, -1.0);
    // HBM bytes spread evenly over the transfer's time.
    const double bytes = static_cast<double>(plan.hbm_read_bytes + plan.hbm_write_bytes);
    if (bytes <= 0) continue;
    const int64_t a = t.first_start.v, b = std::max(t.last_end.v, a + 1);
    for (int64_t w = a / window.v; w * window.v < b; ++w) {
      const int64_t lo = std::max(a, w * window.v), hi = std::min(b, (w + 1) * window.v);
      if (static_cast<size_t>(w) >= hbm.size()) hbm.resize(static_cast<size_t>(w) + 1, 0.0);
      hbm[static_cast<size_t>(w)] +=
          bytes * static_cast<double>(hi - lo) / static_cast<double>(b - a);
    }
  }
  for (auto& [queue, changes] : depth)
    record_steps(trace_, trace_.add_counter(process_, fmt::format("dma q{} depth", queue), ""),
                 std::move(changes), window);
  const uint32_t bw = trace_.add_counter(process_, "hbm GB/s", "GB/s");
  double last = -1;
  for (size_t w = 0; w < hbm.size(); ++w) {
    // bytes per ps x 1e12 / 1e9 = GB/s
    const double gbps = hbm[w] / static_cast<double>(window.v) * 1e3;
    if (gbps != last)
      trace_.record_counter(bw, Picoseconds(static_cast<int64_t>(w) * window.v), gbps);
    last = gbps;
  }
  if (!hbm.empty() && last != 0)
    trace_.record_counter(bw, Picoseconds(static_cast<int64_t>(hbm.size()) * window.v), 0.0);
}

}  // namespace trnsim::core
