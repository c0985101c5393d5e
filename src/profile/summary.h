// A text summary of a trace: the time span, then per track the number of spans, the busy time
// (union of its spans) and its share of the span, then the labels that took the most time.
#pragma once

#include <cstddef>
#include <string>

#include "profile/trace.h"

namespace trnsim::profile {

struct TrackSummary {
  size_t spans = 0;
  Picoseconds busy;   // time covered by at least one span of the track
  Picoseconds first;  // earliest start
  Picoseconds last;   // latest end
};

// Per-track figures, indexed like trace.tracks().
std::vector<TrackSummary> summarize_tracks(const Trace& trace);

// `top` labels by total span time (ties by label index, so the text is deterministic).
std::string text_summary(const Trace& trace, size_t top = 10);

}  // namespace trnsim::profile
