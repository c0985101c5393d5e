#include "profile/summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "profile/chrome_trace.h"

namespace trnsim::profile {

std::vector<TrackSummary> summarize_tracks(const Trace& trace) {
  std::vector<TrackSummary> out(trace.tracks().size());
  std::vector<Picoseconds> covered_to(trace.tracks().size(), Picoseconds(INT64_MIN));
  for (const Span& s : sorted_spans(trace)) {
    TrackSummary& t = out.at(s.track);
    if (t.spans == 0) t.first = s.start;
    ++t.spans;
    t.last = std::max(t.last, s.end);
    // Union of intervals: spans arrive by start time.
    Picoseconds& to = covered_to[s.track];
    const Picoseconds from = std::max(s.start, to);
    if (s.end > from) t.busy += s.end - from;
    to = std::max(to, s.end);
  }
  return out;
}

std::string text_summary(const Trace& trace, size_t top) {
  const auto tracks = summarize_tracks(trace);
  Picoseconds begin(INT64_MAX), end(0);
  for (const TrackSummary& t : tracks) {
    if (t.spans == 0) continue;
    begin = std::min(begin, t.first);
    end = std::max(end, t.last);
  }
  if (begin > end) begin = end;
  const double span_ps = static_cast<double>((end - begin).v);
  std::string s;
  char line[256];
  std::snprintf(line, sizeof line, "trace: %zu spans on %zu tracks, %s us .. %s us\n",
                trace.spans().size(), trace.tracks().size(), ps_to_us_string(begin).c_str(),
                ps_to_us_string(end).c_str());
  s += line;
  std::snprintf(line, sizeof line, "%-24s %-10s %12s %16s %7s\n", "process", "track", "spans",
                "busy us", "busy %");
  s += line;
  for (size_t i = 0; i < tracks.size(); ++i) {
    const TrackSummary& t = tracks[i];
    const double pct = span_ps > 0 ? 100.0 * static_cast<double>(t.busy.v) / span_ps : 0.0;
    std::snprintf(line, sizeof line, "%-24s %-10s %12zu %16s %6.2f%%\n",
                  trace.tracks()[i].process.c_str(), trace.tracks()[i].name.c_str(), t.spans,
                  ps_to_us_string(t.busy).c_str(), pct);
    s += line;
  }
  // Labels by total time.
  std::vector<std::pair<int64_t, uint32_t>> by_label(trace.labels().size());
  std::vector<size_t> counts(trace.labels().size());
  for (size_t i = 0; i < by_label.size(); ++i) by_label[i] = {0, static_cast<uint32_t>(i)};
  for (const Span& sp : trace.spans()) {
    by_label.at(sp.label).first += (sp.end - sp.start).v;
    ++counts[sp.label];
  }
  std::stable_sort(by_label.begin(), by_label.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  s += "top labels by time:\n";
  for (size_t i = 0; i < std::min(top, by_label.size()); ++i) {
    const auto& [ps, label] = by_label[i];
    if (counts[label] == 0) break;
    std::snprintf(line, sizeof line, "  %16s us %10zu x  %s\n",
                  ps_to_us_string(Picoseconds(ps)).c_str(), counts[label],
                  trace.labels()[label].name.c_str());
    s += line;
  }
  return s;
}

}  // namespace trnsim::profile
