// A trace recorder: timed spans on named tracks, each span pointing at a label (name, category
// and key/value arguments). It knows nothing of what it records (ARCHITECTURE.md: profile
// depends only on sim events), so any simulated component can feed it: the NeuronCore timing
// model registers one track per engine and DMA queue and one label per static instruction, then
// records (track, start, end, label) per executed instruction without building strings.
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

class Trace {
 public:
  // Returns the new track's index; tracks keep the order they were added in.
  uint32_t add_track(std::string process, std::string name);
  uint32_t add_label(Label label);
  // The hot path: one push_back of a 24-byte record.
  void record(uint32_t track, Picoseconds start, Picoseconds end, uint32_t label) {
    spans_.push_back(Span{start, end, track, label});
  }
  void reserve(size_t spans) { spans_.reserve(spans); }
  void clear_spans() { spans_.clear(); }

  const std::vector<Track>& tracks() const { return tracks_; }
  const std::vector<Label>& labels() const { return labels_; }
  const std::vector<Span>& spans() const { return spans_; }

 private:
  std::vector<Track> tracks_;
  std::vector<Label> labels_;
  std::vector<Span> spans_;
};

// Spans sorted by (start, track, end, label): the order exports use, so a trace's text does not
// depend on the order components happened to record in.
std::vector<Span> sorted_spans(const Trace& trace);

}  // namespace trnsim::profile
