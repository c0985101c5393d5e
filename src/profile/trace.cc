#include "profile/trace.h"

#include <algorithm>
#include <tuple>

namespace trnsim::profile {

uint32_t Trace::add_track(std::string process, std::string name) {
  tracks_.push_back(Track{std::move(process), std::move(name)});
  return static_cast<uint32_t>(tracks_.size() - 1);
}

uint32_t Trace::add_label(Label label) {
  labels_.push_back(std::move(label));
  return static_cast<uint32_t>(labels_.size() - 1);
}

uint32_t Trace::add_counter(std::string process, std::string name, std::string unit) {
  counters_.push_back(Counter{std::move(process), std::move(name), std::move(unit)});
  return static_cast<uint32_t>(counters_.size() - 1);
}

std::vector<Span> sorted_spans(const Trace& trace) {
  std::vector<Span> out = trace.spans();
  std::stable_sort(out.begin(), out.end(), [](const Span& a, const Span& b) {
    return std::tie(a.start, a.track, a.end, a.label) < std::tie(b.start, b.track, b.end, b.label);
  });
  return out;
}

Trace window(const Trace& trace, Picoseconds start, Picoseconds end) {
  Trace out;
  for (const Track& t : trace.tracks()) out.add_track(t.process, t.name);
  for (const Label& l : trace.labels()) out.add_label(l);
  for (const Counter& c : trace.counters()) out.add_counter(c.process, c.name, c.unit);
  constexpr uint64_t kDropped = UINT64_MAX;
  std::vector<uint64_t> kept(trace.spans().size(), kDropped);
  for (size_t i = 0; i < trace.spans().size(); ++i) {
    const Span& s = trace.spans()[i];
    const bool overlaps = s.start < end && (s.end > start || s.start == start);
    if (overlaps) kept[i] = out.record(s.track, s.start, s.end, s.label);
  }
  for (const Flow& f : trace.flows())
    if (kept[f.from] != kDropped && kept[f.to] != kDropped) out.add_flow(kept[f.from], kept[f.to]);
  // Each counter's latest sample before the window gives its value at `start`.
  std::vector<const CounterSample*> before(trace.counters().size(), nullptr);
  std::vector<CounterSample> inside;
  for (const CounterSample& c : trace.counter_samples()) {
    if (c.t < start) {
      const CounterSample*& b = before[c.counter];
      if (b == nullptr || b->t <= c.t) b = &c;
    } else if (c.t < end) {
      inside.push_back(c);
    }
  }
  for (const CounterSample* b : before)
    if (b != nullptr) out.record_counter(b->counter, start, b->value);
  for (const CounterSample& c : inside) out.record_counter(c.counter, c.t, c.value);
  return out;
}

}  // namespace trnsim::profile
