// A trace recorder: timed spans on named tracks, each span pointing at a label (name, category
// and key/value arguments). It knows nothing of what it records (ARCHITECTURE.md: profile
// depends only on sim events), so any simulated component can feed it: the NeuronCore timing
// model registers one track per engine and DMA queue and one label per static instruction, then
// records (track, start, end, label) per executed instruction without building strings.
// Optional extras: flows (a span that another one depended on: a semaphore's producer, a DMA
// transfer's trigger) and counters (a value over time: bytes in use, queue depth, bandwidth).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/units.h"

namespace trnsim::profile {

struct Track {
  std::string process;  // groups tracks (a NeuronCore); a Perfetto process
  std::string name;     // the track (an engine, a DMA queue); a Perfetto thread
};

struct Label {
  std::string name;      // what the span shows ("multiply_moving 'mm0'")
  std::string category;  // a class for filtering ("pe", "dma")
  std::vector<std::pair<std::string, std::string>> args;  // shown on selection, in this order
};

struct Span {
  Picoseconds start;
  Picoseconds end;
  uint32_t track = 0;
  uint32_t label = 0;
};

// `to` depended on `from` (span indices, in recording order): an arrow in a viewer.
struct Flow {
  uint64_t from = 0;
  uint64_t to = 0;
};

// A value over time on a track of its own under a process.
struct Counter {
  std::string process;
  std::string name;  // "sbuf bytes"
  std::string unit;  // "bytes", "GB/s", "" (a count)
};

// The counter's value from `t` on (until its next sample).
struct CounterSample {
  Picoseconds t;
  double value = 0;
  uint32_t counter = 0;
};

class Trace {
 public:
  // Returns the new track's index; tracks keep the order they were added in.
  uint32_t add_track(std::string process, std::string name);
  uint32_t add_label(Label label);
  // The hot path: one push_back of a 24-byte record. Returns the span's index (for flows).
  uint64_t record(uint32_t track, Picoseconds start, Picoseconds end, uint32_t label) {
    spans_.push_back(Span{start, end, track, label});
    return spans_.size() - 1;
  }
  void reserve(size_t spans) { spans_.reserve(spans); }
  // Spans and the flows between them.
  void clear_spans() {
    spans_.clear();
    flows_.clear();
  }
  void add_flow(uint64_t from, uint64_t to) { flows_.push_back(Flow{from, to}); }
  uint32_t add_counter(std::string process, std::string name, std::string unit);
  void record_counter(uint32_t counter, Picoseconds t, double value) {
    samples_.push_back(CounterSample{t, value, counter});
  }

  const std::vector<Track>& tracks() const { return tracks_; }
  const std::vector<Label>& labels() const { return labels_; }
  const std::vector<Span>& spans() const { return spans_; }
  const std::vector<Flow>& flows() const { return flows_; }
  const std::vector<Counter>& counters() const { return counters_; }
  const std::vector<CounterSample>& counter_samples() const { return samples_; }

 private:
  std::vector<Track> tracks_;
  std::vector<Label> labels_;
  std::vector<Span> spans_;
  std::vector<Flow> flows_;
  std::vector<Counter> counters_;
  std::vector<CounterSample> samples_;
};

// Spans sorted by (start, track, end, label): the order exports use, so a trace's text does not
// depend on the order components happened to record in.
std::vector<Span> sorted_spans(const Trace& trace);

// The part of `trace` in [start, end): spans that overlap it (a span of zero length at
// `start` counts), the flows between spans kept, and each counter's samples in it, led by its
// value at `start`. Tracks, labels and counters are all kept, in order.
Trace window(const Trace& trace, Picoseconds start, Picoseconds end);

// Appends `from`'s tracks, labels, spans, flows and counters to `to`, its spans and samples
// shifted by `offset`, each process renamed by `rename` (SPMD instances side by side).
template <class Rename>
void append_trace(Trace& to, const Trace& from, Picoseconds offset, Rename rename);

template <class Rename>
void append_trace(Trace& to, const Trace& from, Picoseconds offset, Rename rename) {
  std::vector<uint32_t> track, label, counter;
  for (const Track& t : from.tracks()) track.push_back(to.add_track(rename(t.process), t.name));
  for (const Label& l : from.labels()) label.push_back(to.add_label(l));
  for (const Counter& c : from.counters())
    counter.push_back(to.add_counter(rename(c.process), c.name, c.unit));
  const uint64_t base = to.spans().size();
  for (const Span& s : from.spans())
    to.record(track[s.track], s.start + offset, s.end + offset, label[s.label]);
  for (const Flow& f : from.flows()) to.add_flow(base + f.from, base + f.to);
  for (const CounterSample& c : from.counter_samples())
    to.record_counter(counter[c.counter], c.t + offset, c.value);
}

}  // namespace trnsim::profile
