#include "profile/perfetto_trace.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <numeric>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>

#include "profile/protobuf_writer.h"

namespace trnsim::profile {

namespace {

// Field numbers of the messages written (protos/perfetto/trace/...; checked against the
// published schema by tests/python/test_perfetto_trace.py).
namespace field {
constexpr uint32_t kPacket = 1;  // Trace.packet
// TracePacket
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kInternedData = 12,
                   kSequenceFlags = 13, kTrackDescriptor = 60;
// TrackDescriptor
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8,
                   kChildOrdering = 11, kSiblingOrderRank = 12;
// ProcessDescriptor, ThreadDescriptor
constexpr uint32_t kPid = 1, kProcessName = 6, kTid = 2, kThreadName = 5;
// CounterDescriptor
constexpr uint32_t kUnit = 3, kUnitName = 6;
// TrackEvent
constexpr uint32_t kCategoryIids = 3, kDebugAnnotations = 4, kType = 9, kNameIid = 10,
                   kTrackUuid = 11, kCounterValue = 30, kDoubleCounterValue = 44, kFlowIds = 47,
                   kTerminatingFlowIds = 48;
// InternedData
constexpr uint32_t kEventCategories = 1, kEventNames = 2, kAnnotationNames = 3,
                   kAnnotationStrings = 29;
// EventCategory, EventName, DebugAnnotationName, InternedString
constexpr uint32_t kIid = 1, kInternedName = 2;
// DebugAnnotation
constexpr uint32_t kAnnotationNameIid = 1, kIntValue = 4, kStringValueIid = 17;
}  // namespace field

constexpr uint64_t kSequence = 1;
constexpr uint64_t kIncrementalStateCleared = 1;                       // TracePacket.SequenceFlags
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kCounterEvent = 4;  // TrackEvent.Type
constexpr uint64_t kUnitCount = 2, kUnitSizeBytes = 3;                 // CounterDescriptor.Unit
constexpr uint64_t kOrderingExplicit = 3;  // TrackDescriptor.ChildTracksOrdering

constexpr int64_t kPsPerNs = 1000;
uint64_t ns(Picoseconds t) { return t.v <= 0 ? 0 : static_cast<uint64_t>(t.v / kPsPerNs); }

// "123" -> 123 when the text is exactly that integer's decimal form (written back the same).
bool as_integer(const std::string& s, int64_t& v) {
  if (s.empty() || s.size() > 19) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && std::to_string(v) == s;
}

// The name of tracks written as one: "dma0-15.q0" when the names differ only in consecutive
// numbers, else the first name and how many more.
std::string group_name(const std::vector<std::string>& names) {
  if (names.size() == 1) return names.front();
  const std::string& a = names.front();
  size_t pre = a.size(), suf = a.size();
  for (const std::string& n : names) {
    pre =
        std::min(pre, static_cast<size_t>(
                          std::mismatch(a.begin(), a.end(), n.begin(), n.end()).first - a.begin()));
    suf = std::min(
        suf, static_cast<size_t>(std::mismatch(a.rbegin(), a.rend(), n.rbegin(), n.rend()).first -
                                 a.rbegin()));
  }
  const auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (pre > 0 && digit(a[pre - 1])) --pre;
  while (suf > 0 && digit(a[a.size() - suf])) --suf;
  std::vector<int64_t> nums;
  for (const std::string& n : names) {
    if (pre + suf >= n.size()) break;
    const std::string mid = n.substr(pre, n.size() - pre - suf);
    int64_t v = 0;
    if (!as_integer(mid, v) || v < 0) break;
    nums.push_back(v);
  }
  if (nums.size() == names.size()) {
    std::sort(nums.begin(), nums.end());
    bool consecutive = true;
    for (size_t i = 1; i < nums.size(); ++i)
      consecutive = consecutive && nums[i] == nums[0] + static_cast<int64_t>(i);
    if (consecutive)
      return a.substr(0, pre) + std::to_string(nums.front()) + "-" + std::to_string(nums.back()) +
             a.substr(a.size() - suf);
  }
  return a + " (+" + std::to_string(names.size() - 1) + " identical)";
}

class Interner {
 public:
  // The string's iid; `fresh` when it is new (its entry goes into the packet's InternedData).
  uint64_t get(const std::string& s, bool& fresh) {
    const auto [it, inserted] = ids_.try_emplace(s, ids_.size() + 1);
    fresh = inserted;
    return it->second;
  }

 private:
  std::unordered_map<std::string, uint64_t> ids_;
};

struct Thread {
  uint64_t uuid = 0;
  uint32_t pid = 0;
  int64_t tid = 0;
  std::string name;
  int32_t rank = 0;  // order under its process
};

struct Slice {
  uint64_t begin = 0, end = 0;  // ns
  uint64_t span = 0;            // index in the trace
  uint32_t thread = 0;          // index into threads
  uint32_t track = 0;           // the trace's track (ordering)
  uint32_t label = 0;
  uint64_t pos = 0;  // rank in its track's order
};

class PerfettoWriter {
 public:
  PerfettoWriter(const Trace& t, const PerfettoOptions& o, std::ostream& out)
      : trace_(t),
        options_(o),
        out_(out),
        label_fields_(t.labels().size()),
        label_done_(t.labels().size(), false) {}

  void write() {
    assign_processes();
    group_tracks();
    lay_out_slices();
    map_flows();
    write_descriptors();
    write_events();
    flush();
  }

 private:
  void assign_processes() {
    const auto pid = [&](const std::string& p) {
      const auto [it, inserted] = pid_of_.try_emplace(p, static_cast<uint32_t>(procs_.size() + 1));
      if (inserted) procs_.push_back(p);
      return it->second;
    };
    for (const Track& t : trace_.tracks()) track_pid_.push_back(pid(t.process));
    for (const Counter& c : trace_.counters()) counter_pid_.push_back(pid(c.process));
  }

  // Each track's spans in the order they are laid out: by start (in ns, as written), the
  // longer first at equal starts (so that it can hold the shorter), then by label, exact
  // times and recording order.
  void group_tracks() {
    const auto& spans = trace_.spans();
    const size_t n = trace_.tracks().size();
    by_track_.assign(n, {});
    for (uint64_t i = 0; i < spans.size(); ++i) by_track_[spans[i].track].push_back(i);
    const auto key = [&](uint64_t i) {
      const Span& s = spans[i];
      return std::make_tuple(ns(s.start), ~ns(s.end), s.label, s.start.v, s.end.v, i);
    };
    for (auto& v : by_track_)
      std::sort(v.begin(), v.end(), [&](uint64_t x, uint64_t y) { return key(x) < key(y); });
    rep_.resize(n);
    std::iota(rep_.begin(), rep_.end(), 0u);
    members_.assign(n, {});
    for (uint32_t t = 0; t < n; ++t) members_[t].push_back(t);
    if (!options_.merge_identical_tracks) return;
    const auto same = [&](uint32_t a, uint32_t b) {
      const auto &x = by_track_[a], &y = by_track_[b];
      if (x.size() != y.size()) return false;
      for (size_t k = 0; k < x.size(); ++k) {
        const Span &p = spans[x[k]], &q = spans[y[k]];
        if (p.start != q.start || p.end != q.end || p.label != q.label) return false;
      }
      return true;
    };
    std::map<std::tuple<uint32_t, uint64_t, size_t>, std::vector<uint32_t>> buckets;
    for (uint32_t t = 0; t < n; ++t) {
      if (by_track_[t].empty()) continue;
      uint64_t h = 1469598103934665603ull;  // FNV-1a over the spans
      for (uint64_t i : by_track_[t]) {
        const Span& s = spans[i];
        for (uint64_t v : {static_cast<uint64_t>(s.start.v), static_cast<uint64_t>(s.end.v),
                           static_cast<uint64_t>(s.label)})
          h = (h ^ v) * 1099511628211ull;
      }
      std::vector<uint32_t>& reps = buckets[{track_pid_[t], h, by_track_[t].size()}];
      const auto it =
          std::find_if(reps.begin(), reps.end(), [&](uint32_t r) { return same(r, t); });
      if (it == reps.end()) {
        reps.push_back(t);
      } else {
        rep_[t] = *it;
        members_[*it].push_back(t);
        members_[t].clear();
      }
    }
  }

  void lay_out_slices() {
    const auto& spans = trace_.spans();
    const size_t n = trace_.tracks().size();
    to_rep_.resize(spans.size());
    std::iota(to_rep_.begin(), to_rep_.end(), uint64_t{0});
    std::vector<Thread> extra;  // lanes past the first: after every track's own thread
    for (uint32_t t = 0; t < n; ++t) {
      if (rep_[t] != t) {
        for (size_t k = 0; k < by_track_[t].size(); ++k)
          to_rep_[by_track_[t][k]] = by_track_[rep_[t]][k];
        continue;
      }
      std::vector<std::string> names;
      for (uint32_t m : members_[t]) names.push_back(trace_.tracks()[m].name);
      const std::string name = group_name(names);
      const auto own = static_cast<uint32_t>(threads_.size());
      threads_.push_back(
          Thread{0, track_pid_[t], static_cast<int64_t>(t) + 1, name, static_cast<int32_t>(t)});
      // Lanes: a span goes to the first lane where it nests in what is still open.
      std::vector<std::vector<uint64_t>> open;
      std::vector<uint32_t> lane_thread;
      for (size_t k = 0; k < by_track_[t].size(); ++k) {
        const Span& s = spans[by_track_[t][k]];
        const uint64_t b = ns(s.start), e = std::max(ns(s.end), b);
        size_t lane = 0;
        for (; lane < open.size(); ++lane) {
          auto& st = open[lane];
          while (!st.empty() && st.back() <= b) st.pop_back();
          if (st.empty() || st.back() >= e) break;
        }
        if (lane == open.size()) {
          open.emplace_back();
          if (lane == 0) {
            lane_thread.push_back(own);
          } else {
            lane_thread.push_back(static_cast<uint32_t>(n + extra.size()));  // fixed up below
            extra.push_back(Thread{0, track_pid_[t], 0,
                                   name + " (" + std::to_string(lane + 1) + ")",
                                   static_cast<int32_t>(n + extra.size())});
          }
        }
        open[lane].push_back(e);
        slices_.push_back(Slice{b, e, by_track_[t][k], lane_thread[lane], t, s.label, k});
      }
    }
    // Extra lanes' threads follow the tracks' own; slices named them by n + their index.
    const auto own_threads = static_cast<uint32_t>(threads_.size());
    for (Slice& s : slices_)
      if (s.thread >= n) s.thread = own_threads + (s.thread - static_cast<uint32_t>(n));
    for (size_t i = 0; i < extra.size(); ++i) {
      extra[i].tid = static_cast<int64_t>(n + 1 + i);
      threads_.push_back(std::move(extra[i]));
    }
    uint64_t uuid = procs_.size() + 1;
    for (Thread& th : threads_) th.uuid = uuid++;
    for (size_t c = 0; c < trace_.counters().size(); ++c) counter_uuid_.push_back(uuid++);
    std::sort(slices_.begin(), slices_.end(), [](const Slice& a, const Slice& b) {
      return std::tie(a.begin, b.end, a.track, a.pos) < std::tie(b.begin, a.end, b.track, b.pos);
    });
  }

  // Flows between the spans written (a span of a merged track stands for its group's).
  void map_flows() {
    std::vector<std::pair<uint64_t, uint64_t>> pairs;
    for (const Flow& f : trace_.flows()) {
      if (f.from >= to_rep_.size() || f.to >= to_rep_.size()) continue;
      const uint64_t a = to_rep_[f.from], b = to_rep_[f.to];
      if (a != b) pairs.emplace_back(a, b);
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    for (size_t i = 0; i < pairs.size(); ++i) {
      flow_out_.emplace_back(pairs[i].first, i + 1);
      flow_in_.emplace_back(pairs[i].second, i + 1);
    }
    std::sort(flow_out_.begin(), flow_out_.end());
    std::sort(flow_in_.begin(), flow_in_.end());
  }

  void write_descriptors() {
    for (size_t p = 0; p < procs_.size(); ++p) {
      ProtoBuf proc, desc;
      proc.int_field(field::kPid, static_cast<int64_t>(p + 1));
      proc.bytes_field(field::kProcessName, procs_[p]);
      desc.uint_field(field::kUuid, p + 1);
      desc.message_field(field::kProcess, proc);
      desc.uint_field(field::kChildOrdering, kOrderingExplicit);
      descriptor(desc);
    }
    for (const Thread& th : threads_) {
      ProtoBuf thread, desc;
      thread.int_field(field::kPid, th.pid);
      thread.int_field(field::kTid, th.tid);
      thread.bytes_field(field::kThreadName, th.name);
      desc.uint_field(field::kUuid, th.uuid);
      desc.uint_field(field::kParentUuid, th.pid);
      desc.message_field(field::kThread, thread);
      desc.int_field(field::kSiblingOrderRank, th.rank);
      descriptor(desc);
    }
    for (size_t c = 0; c < trace_.counters().size(); ++c) {
      const Counter& k = trace_.counters()[c];
      ProtoBuf counter, desc;
      if (k.unit == "bytes") {
        counter.uint_field(field::kUnit, kUnitSizeBytes);
      } else if (k.unit.empty()) {
        counter.uint_field(field::kUnit, kUnitCount);
      } else {
        counter.bytes_field(field::kUnitName, k.unit);
      }
      desc.uint_field(field::kUuid, counter_uuid_[c]);
      desc.uint_field(field::kParentUuid, counter_pid_[c]);
      desc.bytes_field(field::kName, k.name);
      desc.message_field(field::kCounter, counter);
      // Counters after the process's threads.
      desc.int_field(field::kSiblingOrderRank,
                     static_cast<int64_t>(trace_.tracks().size() + threads_.size() + c));
      descriptor(desc);
    }
  }

  void descriptor(const ProtoBuf& desc) {
    pkt_.clear();
    pkt_.uint_field(field::kSequenceId, kSequence);
    first_packet_flags();
    pkt_.message_field(field::kTrackDescriptor, desc);
    emit();
  }

  // The sequence's first packet says its incremental state (interned data) starts empty.
  void first_packet_flags() {
    if (started_) return;
    started_ = true;
    pkt_.uint_field(field::kSequenceFlags, kIncrementalStateCleared);
  }

  void write_events() {
    struct End {
      uint64_t t = 0, seq = 0, uuid = 0;
    };
    // Earliest first; at equal times the later begun (the inner slice) first.
    const auto later = [](const End& a, const End& b) {
      return a.t != b.t ? a.t > b.t : a.seq < b.seq;
    };
    std::priority_queue<End, std::vector<End>, decltype(later)> ends(later);
    // Counter samples by time (the latest of a counter's samples at one ns).
    const auto& samples = trace_.counter_samples();
    std::vector<size_t> order(samples.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return std::tie(samples[a].counter, samples[a].t.v) <
             std::tie(samples[b].counter, samples[b].t.v);
    });
    std::vector<size_t> kept;
    for (size_t i = 0; i < order.size(); ++i) {
      const CounterSample& s = samples[order[i]];
      if (i + 1 < order.size() && samples[order[i + 1]].counter == s.counter &&
          ns(samples[order[i + 1]].t) == ns(s.t))
        continue;
      kept.push_back(order[i]);
    }
    std::stable_sort(kept.begin(), kept.end(),
                     [&](size_t a, size_t b) { return ns(samples[a].t) < ns(samples[b].t); });
    size_t next_sample = 0;
    const auto until = [&](uint64_t t) {
      for (;;) {
        const bool end = !ends.empty() && ends.top().t <= t;
        const bool sample = next_sample < kept.size() && ns(samples[kept[next_sample]].t) <= t;
        if (!end && !sample) return;
        if (end && (!sample || ends.top().t <= ns(samples[kept[next_sample]].t))) {
          slice_end(ends.top().t, ends.top().uuid);
          ends.pop();
        } else {
          counter(samples[kept[next_sample++]]);
        }
      }
    };
    for (uint64_t seq = 0; seq < slices_.size(); ++seq) {
      const Slice& s = slices_[seq];
      until(s.begin);
      slice_begin(s);
      ends.push(End{s.end, seq, threads_[s.thread].uuid});
    }
    until(UINT64_MAX);
    if (!started_) {  // an empty trace: one packet that opens the sequence
      pkt_.clear();
      pkt_.uint_field(field::kSequenceId, kSequence);
      first_packet_flags();
      emit();
    }
  }

  void slice_begin(const Slice& s) {
    pkt_.clear();
    interned_.clear();
    event_.clear();
    pkt_.uint_field(field::kTimestamp, s.begin);
    pkt_.uint_field(field::kSequenceId, kSequence);
    first_packet_flags();
    event_.uint_field(field::kType, kSliceBegin);
    event_.uint_field(field::kTrackUuid, threads_[s.thread].uuid);
    event_.raw(label_fields(s.label));
    const auto ids = [&](const std::vector<std::pair<uint64_t, uint64_t>>& v, uint32_t f) {
      auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(s.span, uint64_t{0}));
      for (; it != v.end() && it->first == s.span; ++it) event_.fixed64_field(f, it->second);
    };
    ids(flow_out_, field::kFlowIds);
    ids(flow_in_, field::kTerminatingFlowIds);
    if (!interned_.empty()) pkt_.message_field(field::kInternedData, interned_);
    pkt_.message_field(field::kTrackEvent, event_);
    emit();
  }

  void slice_end(uint64_t t, uint64_t uuid) {
    pkt_.clear();
    event_.clear();
    pkt_.uint_field(field::kTimestamp, t);
    pkt_.uint_field(field::kSequenceId, kSequence);
    event_.uint_field(field::kType, kSliceEnd);
    event_.uint_field(field::kTrackUuid, uuid);
    pkt_.message_field(field::kTrackEvent, event_);
    emit();
  }

  void counter(const CounterSample& s) {
    pkt_.clear();
    event_.clear();
    pkt_.uint_field(field::kTimestamp, ns(s.t));
    pkt_.uint_field(field::kSequenceId, kSequence);
    first_packet_flags();
    event_.uint_field(field::kType, kCounterEvent);
    event_.uint_field(field::kTrackUuid, counter_uuid_[s.counter]);
    constexpr double kExactInt = 9007199254740992.0;  // 2^53
    const double v = s.value;
    if (v == static_cast<double>(static_cast<int64_t>(v)) && v > -kExactInt && v < kExactInt)
      event_.int_field(field::kCounterValue, static_cast<int64_t>(v));
    else
      event_.double_field(field::kDoubleCounterValue, v);
    pkt_.message_field(field::kTrackEvent, event_);
    emit();
  }

  // A label's name, category and args as TrackEvent fields, encoded at its first use (when
  // its strings are interned, in that packet) and reused after.
  const std::string& label_fields(uint32_t l) {
    if (label_done_[l]) return label_fields_[l];
    const Label& label = trace_.labels()[l];
    ProtoBuf f;
    const auto intern = [&](Interner& in, uint32_t kind, const std::string& s) {
      bool fresh = false;
      const uint64_t iid = in.get(s, fresh);
      if (fresh) {
        ProtoBuf entry;
        entry.uint_field(field::kIid, iid);
        entry.bytes_field(field::kInternedName, s);
        interned_.message_field(kind, entry);
      }
      return iid;
    };
    f.uint_field(field::kNameIid, intern(names_, field::kEventNames, label.name));
    f.uint_field(field::kCategoryIids,
                 intern(categories_, field::kEventCategories, label.category));
    for (const auto& [key, value] : label.args) {
      ProtoBuf a;
      a.uint_field(field::kAnnotationNameIid, intern(arg_names_, field::kAnnotationNames, key));
      int64_t v = 0;
      if (as_integer(value, v))
        a.int_field(field::kIntValue, v);
      else
        a.uint_field(field::kStringValueIid, intern(arg_values_, field::kAnnotationStrings, value));
      f.message_field(field::kDebugAnnotations, a);
    }
    label_done_[l] = true;
    label_fields_[l] = f.bytes();
    return label_fields_[l];
  }

  void emit() {
    ProtoBuf frame;
    frame.tag(field::kPacket, WireType::kLengthDelimited);
    frame.varint(pkt_.size());
    buf_ += frame.bytes();
    buf_ += pkt_.bytes();
    if (buf_.size() >= (size_t{1} << 20)) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

  const Trace& trace_;
  const PerfettoOptions options_;
  std::ostream& out_;

  std::map<std::string, uint32_t> pid_of_;
  std::vector<std::string> procs_;
  std::vector<uint32_t> track_pid_, counter_pid_;
  std::vector<std::vector<uint64_t>> by_track_;
  std::vector<uint32_t> rep_;                   // the track written for each track
  std::vector<std::vector<uint32_t>> members_;  // a written track's group
  std::vector<uint64_t> to_rep_;                // span -> the span written for it
  std::vector<Thread> threads_;
  std::vector<uint64_t> counter_uuid_;
  std::vector<Slice> slices_;
  std::vector<std::pair<uint64_t, uint64_t>> flow_out_, flow_in_;  // (span, flow id)

  Interner names_, categories_, arg_names_, arg_values_;
  std::vector<std::string> label_fields_;
  std::vector<bool> label_done_;
  ProtoBuf pkt_, event_, interned_;
  bool started_ = false;
  std::string buf_;
};

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void write_perfetto_trace(const Trace& trace, std::ostream& out, const PerfettoOptions& options) {
  PerfettoWriter(trace, options, out).write();
}

std::string perfetto_trace_bytes(const Trace& trace, const PerfettoOptions& options) {
  std::ostringstream os;
  write_perfetto_trace(trace, os, options);
  return os.str();
}

TraceFormat trace_format_for(const std::string& path) {
  if (ends_with(path, ".json")) return TraceFormat::kChromeJson;
  if (ends_with(path, ".perfetto-trace") || ends_with(path, ".pftrace"))
    return TraceFormat::kPerfetto;
  return TraceFormat::kUnknown;
}

}  // namespace trnsim::profile
